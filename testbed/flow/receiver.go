package flow

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"time"

	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/testbed/flow/ecnudp"
	"github.com/pi2hop/pi2hop/testbed/flow/wire"
)

// ackState is a receiver's side of the udp_prague protocol: cumulative
// counters, the error_L4S latch, and the timestamp echo for the ACKs.
type ackState struct {
	peer    netip.AddrPort
	started bool
	next    int32 // next expected sequence number

	received, ce, lost int32
	errorL4S           bool
	byECN              [4]int64
	bytes              int64
	echo               wire.Echo
}

// data counts one DATA or RT DATA packet of n bytes that arrived with
// codepoint e at now (µs) and returns the ACK to send for it.
func (a *ackState) data(now int64, d wire.Data, e aqm.ECN, n int) wire.ACK {
	if !a.started {
		a.started = true
		a.next = d.Seq
		if d.Seq >= 1 && d.Seq <= 1024 {
			a.next = 1 // sequence numbers start at 1: earlier ones were lost
		}
	}
	switch diff := d.Seq - a.next; {
	case diff >= 0:
		a.lost += diff
		a.next = d.Seq + 1
	case a.lost > 0:
		a.lost-- // a late packet fills a gap counted as loss
	}
	a.received++
	a.bytes += int64(n)
	a.byECN[e&3]++
	if e == aqm.CE {
		a.ce++
	}
	if e != aqm.ECT1 && e != aqm.CE {
		a.errorL4S = true // bleached or re-marked: tell the sender to stop ECT(1)
	}
	a.echo.Received(now, d.TS)
	return wire.ACK{
		AckSeq: d.Seq, TS: wire.Stamp(now), EchoedTS: a.echo.Echoed(now),
		Received: a.received, CE: a.ce, Lost: a.lost, ErrorL4S: a.errorL4S,
	}
}

// recvLoop reads datagrams from conn until ctx is done or duration has
// passed (0 = no limit), calling onPacket for each one with the
// receiver's clock in µs, tick at least every 20 ms (and by the time wake
// returns, when it is not nil and returns a time > 0), and tick with final
// set at the end.
func recvLoop(ctx context.Context, conn *net.UDPConn, clock wire.Clock, duration time.Duration,
	onPacket func(now int64, p []byte, from netip.AddrPort, e aqm.ECN) error, tick func(now int64, final bool) error,
	wake func() int64) error {
	if err := ecnudp.EnableReceive(conn); err != nil {
		return err
	}
	defer conn.SetReadDeadline(time.Time{})
	stop := context.AfterFunc(ctx, func() { conn.SetReadDeadline(time.Unix(1, 0)) })
	defer stop()
	end := int64(1) << 62
	if duration > 0 {
		end = duration.Microseconds()
	}
	buf, oob := make([]byte, 65536), make([]byte, ecnudp.OOBSize)
	var lastDeadline int64
	for {
		now := clock.Micros()
		if ctx.Err() != nil || now >= end {
			return tick(now, true)
		}
		if err := tick(now, false); err != nil {
			return err
		}
		// Re-arm the deadline only now and then (each call costs a timer),
		// or when something is due before it.
		deadline := lastDeadline
		if now+10000 > lastDeadline {
			deadline = now + 20000
		}
		if wake != nil {
			if w := wake(); w > 0 && w < deadline {
				deadline = max(w, now)
			}
		}
		if deadline != lastDeadline {
			lastDeadline = deadline
			if ctx.Err() == nil {
				conn.SetReadDeadline(time.Now().Add(time.Duration(deadline-now) * time.Microsecond))
			}
		}
		n, oobn, _, from, err := conn.ReadMsgUDPAddrPort(buf, oob)
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) || isTransient(err) {
				continue
			}
			return fmt.Errorf("read: %w", err)
		}
		e, _ := ecnudp.ParseECN(oob[:oobn])
		if err := onPacket(clock.Micros(), buf[:n], from, e); err != nil {
			return err
		}
	}
}
