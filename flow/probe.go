package flow

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"time"

	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/flow/ecnudp"
)

// Probe messages (pi2hop's own, not udp_prague's):
//
//	request  0x70 | ecn u8 (codepoint to reply with) | seq u32 | ts i64 (client µs) | padding
//	reply    0x71 | ecn u8 (as requested)             | seq u32 | ts i64 | ecn u8 (as the request arrived)
const (
	probeRequest = 0x70
	probeReply   = 0x71
	probeSize    = 64 // bytes on the wire (UDP payload)
	probeHeader  = 14
	probeTimeout = time.Second // a reply later than this counts as lost
)

// ProbeServe answers Probe requests on conn until ctx is done: each reply
// goes back with the codepoint the request asked for (so it crosses the
// same queue class), and says which codepoint the request arrived with.
func ProbeServe(ctx context.Context, conn *net.UDPConn) error {
	if err := ecnudp.EnableReceive(conn); err != nil {
		return err
	}
	stop := context.AfterFunc(ctx, func() { conn.SetReadDeadline(time.Unix(1, 0)) })
	defer stop()
	defer conn.SetReadDeadline(time.Time{})
	buf, oob, cmsg := make([]byte, 2048), make([]byte, ecnudp.OOBSize), make([]byte, 0, 64)
	for {
		n, oobn, _, from, err := conn.ReadMsgUDPAddrPort(buf, oob)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if isTransient(err) {
				continue
			}
			return fmt.Errorf("probe server: read: %w", err)
		}
		if n < probeHeader || buf[0] != probeRequest {
			continue
		}
		arrived, _ := ecnudp.ParseECN(oob[:oobn])
		buf[0] = probeReply
		buf[probeHeader] = byte(arrived)
		cmsg = ecnudp.AppendCmsg(cmsg[:0], from, aqm.ECN(buf[1]&3))
		if _, _, err := conn.WriteMsgUDPAddrPort(buf[:max(n, probeHeader+1)], cmsg, from); err != nil && !isTransient(err) {
			return fmt.Errorf("probe server: reply to %v: %w", from, err)
		}
	}
}

// Probe sends a request with codepoint ecn to a ProbeServe at peer every
// interval for d (0 = until ctx is done) and measures round trips. Replies
// come back with the same codepoint, so ECT(1) probes measure the L queue
// and Not-ECT probes the C queue, both ways.
func Probe(ctx context.Context, conn *net.UDPConn, peer netip.AddrPort, ecn aqm.ECN, interval, d time.Duration, report func(Interval)) (ProbeSummary, error) {
	if interval < 100*time.Microsecond {
		return ProbeSummary{}, fmt.Errorf("probe interval %v: want at least 100µs", interval)
	}
	if err := ecnudp.EnableReceive(conn); err != nil {
		return ProbeSummary{}, err
	}
	if err := ecnudp.SetECN(conn, ecn); err != nil {
		return ProbeSummary{}, err
	}
	stop := context.AfterFunc(ctx, func() { conn.SetReadDeadline(time.Unix(1, 0)) })
	defer stop()
	defer conn.SetReadDeadline(time.Time{})

	p := prober{s: ProbeSummary{ECN: ecn.String()}, start: time.Now(), report: report, pending: map[uint32]int64{}}
	p.ivStart = p.start
	p.nextReport = p.start.Add(time.Second)
	end := time.Time{}
	if d > 0 {
		end = p.start.Add(d)
	}
	req, buf, oob := make([]byte, probeSize), make([]byte, 2048), make([]byte, ecnudp.OOBSize)
	req[0], req[1] = probeRequest, byte(ecn&3)
	nextSend := p.start
	for {
		now := time.Now()
		sending := end.IsZero() || now.Before(end)
		if ctx.Err() != nil || (!sending && (len(p.pending) == 0 || now.After(end.Add(probeTimeout)))) {
			p.finish(now)
			return p.s, nil
		}
		if sending && !now.Before(nextSend) {
			p.seq++
			binary.BigEndian.PutUint32(req[2:], p.seq)
			binary.BigEndian.PutUint64(req[6:], uint64(p.micros(now)))
			if _, err := conn.WriteToUDPAddrPort(req, peer); err != nil && !isTransient(err) {
				return p.s, fmt.Errorf("probe: send to %v: %w", peer, err)
			}
			p.pending[p.seq] = p.micros(now)
			p.s.Sent++
			p.ivSent++
			nextSend = nextSend.Add(interval)
			if nextSend.Before(now) {
				nextSend = now.Add(interval)
			}
		}
		p.expire(now)
		if !now.Before(p.nextReport) {
			p.emit(now)
			p.nextReport = p.nextReport.Add(time.Second)
		}
		deadline := p.nextReport
		if sending && nextSend.Before(deadline) {
			deadline = nextSend
		}
		if ctx.Err() == nil {
			conn.SetReadDeadline(deadline)
		}
		n, oobn, _, from, err := conn.ReadMsgUDPAddrPort(buf, oob)
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) || isTransient(err) {
				continue
			}
			return p.s, fmt.Errorf("probe: read: %w", err)
		}
		if n < probeHeader+1 || buf[0] != probeReply || from.Addr().Unmap() != peer.Addr().Unmap() {
			continue
		}
		back, _ := ecnudp.ParseECN(oob[:oobn])
		p.reply(time.Now(), binary.BigEndian.Uint32(buf[2:]), aqm.ECN(buf[probeHeader]&3), back)
	}
}

type prober struct {
	s       ProbeSummary
	start   time.Time
	report  func(Interval)
	seq     uint32
	pending map[uint32]int64 // seq -> send time, µs

	nextReport, ivStart  time.Time
	ivSent, ivLost, ivCE int
	ivRecv, ivRTT        int
}

func (p *prober) micros(t time.Time) int64 { return t.Sub(p.start).Microseconds() }

func (p *prober) reply(now time.Time, seq uint32, forward, back aqm.ECN) {
	sent, ok := p.pending[seq]
	if !ok {
		return // duplicate, or already given up
	}
	delete(p.pending, seq)
	rtt := time.Duration(p.micros(now)-sent) * time.Microsecond
	p.s.RTT = append(p.s.RTT, rtt)
	p.s.RTTAt = append(p.s.RTTAt, time.Duration(sent)*time.Microsecond)
	p.s.Received++
	p.ivRecv++
	p.s.Forward[forward&3]++
	p.s.Return[back&3]++
	if forward == aqm.CE {
		p.s.ForwardCE++
		p.ivCE++
	}
	if back == aqm.CE {
		p.s.ReturnCE++
	}
}

// expire gives up on requests older than probeTimeout.
func (p *prober) expire(now time.Time) {
	limit := p.micros(now) - probeTimeout.Microseconds()
	for seq, sent := range p.pending {
		if sent < limit {
			delete(p.pending, seq)
			p.s.Lost++
			p.ivLost++
		}
	}
}

func (p *prober) emit(now time.Time) {
	d := now.Sub(p.ivStart)
	iv := Interval{Flow: "probe", Label: p.s.Label, T: now.Sub(p.start).Seconds(), Dur: d.Seconds(),
		Packets: int64(p.ivSent), CEFrac: frac(int64(p.ivCE), int64(p.ivRecv)),
		LossFrac: frac(int64(p.ivLost), int64(p.ivRecv+p.ivLost)), ECN: p.s.ECN}
	rttFields(&iv, append([]time.Duration(nil), p.s.RTT[p.ivRTT:]...))
	p.s.Intervals = append(p.s.Intervals, iv)
	if p.report != nil {
		p.report(iv)
	}
	p.ivStart, p.ivSent, p.ivLost, p.ivCE, p.ivRecv, p.ivRTT = now, 0, 0, 0, 0, len(p.s.RTT)
}

// finish counts what never came back as lost and reports the last interval.
func (p *prober) finish(now time.Time) {
	p.s.Lost += len(p.pending)
	p.ivLost += len(p.pending)
	clear(p.pending)
	if now.After(p.ivStart) {
		p.emit(now)
	}
}
