package flow

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"time"

	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/flow/ecnudp"
	"github.com/pi2hop/pi2hop/flow/wire"
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

// recvInterval is what a receiver reports each interval of its transport:
// bytes and packets, and the ACK state's received, CE and lost since the
// interval began. Times in µs.
type recvInterval struct {
	every, next, start int64 // report period, next report, this interval's start
	bytes, pkts        int64
	recv, ce, lost     int32 // the ackState's counters at start
}

func newRecvInterval(every time.Duration) recvInterval {
	e := every.Microseconds()
	return recvInterval{every: e, next: e}
}

// add counts one data packet of n bytes.
func (v *recvInterval) add(n int) { v.bytes += int64(n); v.pkts++ }

// forget counts the ACK state from zero again: a new sender, a new flow.
func (v *recvInterval) forget() { v.recv, v.ce, v.lost = 0, 0, 0 }

// due says whether an interval ends at now; at the end (final) the open
// interval is reported unless no time has passed in it.
func (v *recvInterval) due(now int64, final bool) bool {
	return now >= v.next || (final && now != v.start)
}

// close returns the transport figures of the interval ending at now and
// starts the next one.
func (v *recvInterval) close(flow, label string, now int64, st *ackState) Interval {
	d := time.Duration(now-v.start) * time.Microsecond
	dr, dc, dl := st.received-v.recv, st.ce-v.ce, st.lost-v.lost
	iv := Interval{
		Flow: flow, Label: label, T: float64(now) / 1e6, Dur: d.Seconds(),
		GoodputBps: bps(v.bytes, d), Packets: v.pkts,
		CEFrac: frac(int64(dc), int64(dr)), LossFrac: frac(int64(max(dl, 0)), int64(dr+max(dl, 0))),
		ErrorL4S: st.errorL4S,
	}
	v.start, v.bytes, v.pkts = now, 0, 0
	v.recv, v.ce, v.lost = st.received, st.ce, st.lost
	v.next = max(v.next+v.every, now+1)
	return iv
}

// data counts one DATA or RT DATA packet of n bytes that the kernel
// received with codepoint e at at and this receiver read at now (µs), and
// returns the ACK to send for it at now.
func (a *ackState) data(now, at int64, d wire.Data, e aqm.ECN, n int) wire.ACK {
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
	// The echo freezes at the kernel's receive time: the hold it leaves out
	// of the sender's reported RTT is all of this host's, its wake-up
	// included (udp_prague can only freeze it when its recvfrom returns).
	// The sender's controller times the ACK from its own send time
	// instead (sender.ackAge), so its window covers this wake-up as
	// udp_prague's does.
	a.echo.Received(at, d.TS)
	return wire.ACK{
		AckSeq: d.Seq, TS: wire.Stamp(now), EchoedTS: a.echo.Echoed(now),
		Received: a.received, CE: a.ce, Lost: a.lost, ErrorL4S: a.errorL4S,
		Counts: true, ECT0: int32(a.byECN[aqm.ECT0]), ECT1: int32(a.byECN[aqm.ECT1]), NotECT: int32(a.byECN[aqm.NotECT]),
	}
}

// recvLoop reads datagrams from conn until ctx is done or duration has
// passed (0 = no limit), calling onPacket for each one with the
// receiver's clock in µs when it was read (now) and when the kernel
// received it (at), tick at least every 20 ms (and by the time wake
// returns, when it is not nil and returns a time > 0), and tick with final
// set at the end. It runs on a thread of its own (onPreciseThread) and
// waits with ppoll rather than the netpoller, so an ACK leaves soon after
// its packet's arrival instead of after the runtime got round to the
// goroutine, which on a busy machine can take ms (docs/performance.md)
// and which Prague's window counts as RTT that srtt does not.
func recvLoop(ctx context.Context, conn *net.UDPConn, clock wire.Clock, duration time.Duration,
	onPacket func(now, at int64, p []byte, from netip.AddrPort, e aqm.ECN) error, tick func(now int64, final bool) error,
	wake func() int64) error {
	if err := ecnudp.EnableReceive(conn); err != nil {
		return err
	}
	end := int64(1) << 62
	if duration > 0 {
		end = duration.Microseconds()
	}
	_, err := onPreciseThread(func() (struct{}, error) {
		w := ecnudp.NewWaiter(conn)
		buf, oob := make([]byte, 65536), make([]byte, ecnudp.OOBSize)
		for {
			now := clock.Micros()
			if ctx.Err() != nil || now >= end {
				return struct{}{}, tick(now, true)
			}
			if err := tick(now, false); err != nil {
				return struct{}{}, err
			}
			// Look at ctx every 20 ms at least.
			until := min(now+20000, end)
			if wake != nil {
				if w := wake(); w > 0 && w < until {
					until = max(w, now)
				}
			}
			readable, err := w.Wait(time.Duration(until-now) * time.Microsecond)
			if err != nil {
				return struct{}{}, err
			}
			for readable {
				n, oobn, from, ok, err := w.TryReadMsg(buf, oob)
				if err != nil {
					return struct{}{}, fmt.Errorf("read: %w", err)
				}
				if !ok {
					break
				}
				c := ecnudp.ParseControl(oob[:oobn])
				if err := onPacket(clock.Micros(), clock.At(c.Arrival), buf[:n], from, c.ECN); err != nil {
					return struct{}{}, err
				}
			}
		}
	})
	return err
}
