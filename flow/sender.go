package flow

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"syscall"
	"time"

	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/flow/ecnudp"
	"github.com/pi2hop/pi2hop/flow/prague"
	"github.com/pi2hop/pi2hop/flow/wire"
)

// maxQuietTimeouts consecutive timeouts without any ACK end a sender: the
// peer is gone. (udp_prague exits on the 4th timeout overall; counting
// only consecutive ones keeps a long lossy lab run alive.)
const maxQuietTimeouts = 4

// maxLateness is how much of a late wake-up the pacer makes up for by
// sending early: enough to absorb timer and scheduling jitter; at 10 Mbit/s
// it is less than one packet, so it never sends two back to back (which
// would exceed the L queue's 1 ms step threshold). Here we differ from
// udp_prague on purpose: its sender carries all of its lateness over
// (compRecv) and, after a 10 ms stall, sends 10 ms of packets at once (up
// to its window), a queue spike the step marks and the flow then cuts for.
// The other way round, udp_prague paces afresh from the ACK that opens a
// closed window, where this pacer keeps its schedule (up to the same 1 ms):
// with the endpoints' measured wake-ups the restart costs about 1 % of
// the link at 10 Mbit/s (prague.TestWakeupsSingleFlow: 98.0 vs 96.9 %).
const maxLateness = 1000 // µs

// sender is what the bulk and video Prague senders share: the controller,
// the socket, timestamps, ACK processing, RTT samples, timeouts and
// interval reports. One goroutine owns it.
type sender struct {
	conn   *net.UDPConn
	peer   netip.AddrPort
	cc     *prague.CC
	clock  wire.Clock
	echo   wire.Echo
	waiter *ecnudp.Waiter
	ecn    aqm.ECN // codepoint currently set on the socket

	flow, label string
	interval    int64 // µs
	report      func(Interval)
	onPLI       func(now int64, m wire.PLI)
	// block is the state of block (type-18) feedback, nil when the
	// receiver ACKs every packet (type 17).
	block *blockSender
	// val is the ECN validation (RFC 9000 §13.4.2), nil when it is off
	// (--no-ecn-validation, or a classic flow, which sends Not-ECT).
	val      *prague.Validator
	noVal    bool // validation turned off for an L4S flow
	failedAt int64
	failed   string // the validation's reason, once it failed
	ivFailed string // the same, in the interval it happened
	// The path's minimum RTT, and the largest rise of an interval's
	// median over it in intervals with no new CE while sending ECT(1).
	minRTT, rttRise time.Duration

	seq          int32
	sizes        [1 << 16]uint16 // payload bytes by sequence number (mod 2^16)
	sentAt       [1 << 16]int64  // µs each sequence number (mod 2^16) was sent at
	rbuf, oob    []byte
	blockReports []wire.BlockReport // reused by every block decoded

	lastACK         int64 // µs
	timeouts, quiet int

	packetsSent, bytesSent, ackedBytes int64
	fb                                 prague.Feedback // latest counters from the receiver
	fellBack                           bool
	rtt, rttAt                         []time.Duration

	nextReport                     int64
	ivStart                        int64
	ivPackets, ivSent, ivAckedBase int64
	ivRTT                          int // index of the interval's first RTT sample
	ivFB                           prague.Feedback
	intervals                      []Interval
	extra                          func(iv *Interval) // video fields
}

// newSender sets up the shared sender; block selects type-18 block
// feedback rather than type-17 ACKs, validate the ECN validation of an
// L4S flow.
func newSender(conn *net.UDPConn, peer netip.AddrPort, cc *prague.CC, flow, label string, interval time.Duration, block, validate bool, report func(Interval)) (*sender, error) {
	if !peer.IsValid() {
		return nil, fmt.Errorf("%s: no peer address", flow)
	}
	s := &sender{
		conn: conn, peer: peer, cc: cc, clock: wire.NewClock(), waiter: ecnudp.NewWaiter(conn),
		flow: flow, label: label, interval: interval.Microseconds(), report: report,
		rbuf: make([]byte, 65536), // a block report may fill a large datagram
		oob:  make([]byte, ecnudp.OOBSize),
	}
	if block {
		s.block = new(blockSender)
	}
	s.ecn = cc.Info(0).ECN
	if s.ecn != aqm.NotECT {
		if validate {
			s.val = prague.NewValidator(s.ecn)
		} else {
			s.noVal = true
		}
	}
	if err := ecnudp.SetECN(conn, s.ecn); err != nil {
		return nil, err
	}
	if err := ecnudp.EnableReceive(conn); err != nil { // the ACKs' receive times
		return nil, err
	}
	s.nextReport = s.interval
	return s, nil
}

// now returns the sender's clock in µs.
func (s *sender) now() int64 { return s.clock.Micros() }

// dataHeader returns the DATA header for the next packet.
func (s *sender) dataHeader(now int64) wire.Data {
	return wire.Data{TS: wire.Stamp(now), EchoedTS: s.echo.Echoed(now), Seq: s.seq + 1}
}

// write sends p (whose header carries sequence number s.seq+1, stamped
// at now) with the codepoint the validation picks, and counts it.
func (s *sender) write(now int64, p []byte) error {
	if s.val != nil {
		if e := s.val.Next(); e != s.ecn {
			if err := ecnudp.SetECN(s.conn, e); err != nil {
				return fmt.Errorf("%s: %w", s.flow, err)
			}
			s.ecn = e
		}
	}
	if _, err := s.conn.WriteToUDPAddrPort(p, s.peer); err != nil {
		if isTransient(err) {
			return nil // not sent: the pacer moves on, as if it had been lost at once
		}
		return fmt.Errorf("%s: send to %v: %w", s.flow, s.peer, err)
	}
	s.record(now, len(p))
	return nil
}

// record counts a datagram of n bytes sent at now as sequence number
// s.seq+1.
func (s *sender) record(now int64, n int) {
	s.seq++
	if s.block != nil {
		s.block.sent(now, s.seq)
	}
	if s.val != nil {
		s.val.Send(s.seq)
	}
	s.cc.Sent(1)
	s.sizes[uint16(s.seq)] = uint16(n)
	s.sentAt[uint16(s.seq)] = now
	s.packetsSent++
	s.bytesSent += int64(n)
	s.ivPackets++
	s.ivSent += int64(n)
}

// isTransient reports errors a UDP socket may hit and recover from: a
// full buffer, an interrupted call, or an ICMP error from an earlier
// datagram (a peer not yet listening, a route flapping).
func isTransient(err error) bool {
	for _, e := range []syscall.Errno{syscall.EAGAIN, syscall.EINTR, syscall.ENOBUFS,
		syscall.ECONNREFUSED, syscall.EHOSTUNREACH, syscall.ENETUNREACH} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// drain reads every datagram waiting on the socket, each timed as it is
// read and as the kernel received it (RTT samples are µs-exact).
func (s *sender) drain() error {
	for {
		n, oobn, from, ok, err := s.waiter.TryReadMsg(s.rbuf, s.oob)
		if err != nil {
			return fmt.Errorf("%s: read: %w", s.flow, err)
		}
		if !ok {
			return nil
		}
		if from.Addr().Unmap() != s.peer.Addr().Unmap() || from.Port() != s.peer.Port() || n == 0 {
			continue
		}
		at := s.clock.At(ecnudp.ParseControl(s.oob[:oobn]).Arrival)
		switch p := s.rbuf[:n]; p[0] {
		case wire.TypeACK:
			if a, err := wire.DecodeACK(p); err == nil {
				if s.block != nil {
					return feedbackMismatch(s.flow, wire.TypeACK)
				}
				s.onACK(s.now(), at, a)
			}
		case wire.TypeBlockACK:
			if a, err := wire.DecodeBlockACK(p, s.blockReports); err == nil {
				if s.block == nil {
					return feedbackMismatch(s.flow, wire.TypeBlockACK)
				}
				s.blockReports = a.Reports
				s.onBlock(s.now(), at, a)
			}
		case wire.TypePLI:
			if m, err := wire.DecodePLI(p); err == nil && s.onPLI != nil {
				s.onPLI(s.now(), m)
			}
		}
	}
}

// onACK applies a per-packet ACK that the kernel received at at and this
// sender read at now.
func (s *sender) onACK(now, at int64, a wire.ACK) {
	s.echo.Received(at, a.TS)
	if a.EchoedTS != 0 {
		if rtt := int64(wire.Since(now, a.EchoedTS)); rtt >= 0 && rtt < 60e6 {
			s.sample(s.ackAge(now, a.AckSeq, rtt), rtt, now-at, now)
		}
	}
	fb := prague.Feedback{Received: a.Received, CE: a.CE, Lost: a.Lost, ErrorL4S: a.ErrorL4S}
	if fb.Received > s.fb.Received {
		s.ackedBytes += int64(fb.Received-s.fb.Received) * int64(s.sizes[uint16(a.AckSeq)])
	}
	if fb.Received >= s.fb.Received {
		s.fb = fb
	}
	if s.val != nil && a.AckSeq >= 1 && a.AckSeq <= s.seq {
		s.val.Acked(a.AckSeq)
	}
	s.validate(now, prague.ECNFeedback{Received: int64(a.Received), Lost: int64(a.Lost), HasCounts: a.Counts,
		Counts: prague.ECNCounts{ECT0: int64(a.ECT0), ECT1: int64(a.ECT1), CE: int64(a.CE)}, ErrorL4S: a.ErrorL4S})
	s.cc.ACK(now, s.ccFeedback(fb))
	s.lastACK = now
	s.quiet = 0
}

// ccFeedback is the feedback the controller takes: the receiver's
// error_L4S is left to the validation, which falls back for it when the
// receiver sends no counts, and ignored without validation (a naive
// sender).
func (s *sender) ccFeedback(fb prague.Feedback) prague.Feedback {
	fb.ErrorL4S = false
	return fb
}

// validate runs the ECN validation on a feedback read at now and falls
// back to Not-ECT with a loss-only response when it fails.
func (s *sender) validate(now int64, f prague.ECNFeedback) {
	if s.val == nil || s.failed != "" || !s.val.Feedback(now, f) {
		return
	}
	r, _ := s.val.Failure()
	s.failed, s.ivFailed, s.failedAt = r.String(), r.String(), now
	s.cc.FallBack()
	s.fellBack = true
}

// ackAge returns the controller's RTT sample for a type-17 ACK of seq
// read at now: the time since seq was sent, both ends' wake-ups included,
// which is what udp_prague's srtt measures (its receiver freezes the echo
// only when its recvfrom returns, and replies at once). Ours freezes it at
// the kernel's receive time (ackState.data), so the echoed RTT, echoed µs,
// leaves the receiver's wake-up out; a window of rate·srtt·1.03 + 1
// packet built on that is short by the rate times that wake-up, and at 50
// Mbit/s (0.8 ms of headroom) a receiver woken 0.5 ms late closes it.
// A seq this sender did not send in the last 2^16 packets gives echoed.
func (s *sender) ackAge(now int64, seq int32, echoed int64) int64 {
	if seq < 1 || seq > s.seq || s.seq-seq >= 1<<16 {
		return echoed
	}
	return max(now-s.sentAt[uint16(seq)], echoed)
}

// sample takes one RTT sample, read at now, hold µs after the kernel
// received its ACK: ctl µs for the controller, rtt µs (the echoed RTT)
// for the report. The controller takes its sample as read, as udp_prague
// does: its window must cover both ends' wake-ups. The figure reported is
// the path's RTT, without the holds: on a machine that runs the hop and
// every endpoint, the endpoints' wake-ups are the lab's cost, not the
// path's. With the receiver's echo frozen at its kernel's receive time
// (ackState.data), the figure is kernel to kernel, as TCP measures it.
func (s *sender) sample(ctl, rtt, hold, now int64) {
	s.cc.RTT(ctl)
	path := max(rtt-max(hold, 0), 1)
	if s.val != nil {
		s.val.RTT(now, path)
	}
	if d := time.Duration(path) * time.Microsecond; s.minRTT == 0 || d < s.minRTT {
		s.minRTT = d
	}
	s.rtt = append(s.rtt, time.Duration(path)*time.Microsecond)
	s.rttAt = append(s.rttAt, time.Duration(now)*time.Microsecond)
}

// onBlock applies a block report: the counters it updates, one RTT sample
// per newly received packet, and (as udp_prague, only when it gave a
// sample) the controller's ACK step.
func (s *sender) onBlock(now, at int64, a wire.BlockACK) {
	rtts, ok := s.block.report(now, a, s.seq, func(seq int32) {
		s.ackedBytes += int64(s.sizes[uint16(seq)])
		if s.val != nil {
			s.val.Acked(seq)
		}
	})
	if !ok {
		return
	}
	for _, rtt := range rtts {
		s.sample(rtt, rtt, now-at, now)
	}
	b := s.block
	s.fb = prague.Feedback{Received: b.received, CE: b.ce, Lost: b.lost, ErrorL4S: b.errorL4S}
	// The reports carry every packet's arrival codepoint: the counts.
	s.validate(now, prague.ECNFeedback{Received: int64(b.received), Lost: int64(b.lost), HasCounts: true,
		Counts: prague.ECNCounts{ECT0: b.ect0, ECT1: b.ect1, CE: int64(b.ce)}})
	if len(rtts) > 0 {
		s.cc.ACK(now, s.ccFeedback(s.fb))
	}
	s.lastACK = now
	s.quiet = 0
}

// tick does the housekeeping due at now: timeouts, reports.
func (s *sender) tick(now int64) error {
	if info := s.cc.Info(now); s.cc.Inflight() >= info.PacketWindow && now-s.lastACK >= prague.TimeoutAfter {
		if s.val != nil {
			s.val.Stalled() // the path may have changed: test it again
		}
		s.cc.Timeout(now)
		s.timeouts++
		s.quiet++
		s.lastACK = now
		if s.quiet >= maxQuietTimeouts {
			return fmt.Errorf("%s: no ACK from %v for %d s: is the receiver running?", s.flow, s.peer, s.quiet)
		}
	}
	if now >= s.nextReport {
		s.emit(now)
		s.nextReport += s.interval
		if s.nextReport <= now {
			s.nextReport = now + s.interval
		}
	}
	return nil
}

// emit reports the interval ending at now.
func (s *sender) emit(now int64) {
	d := time.Duration(now-s.ivStart) * time.Microsecond
	info := s.cc.Info(now)
	dr, dc, dl := s.fb.Received-s.ivFB.Received, s.fb.CE-s.ivFB.CE, s.fb.Lost-s.ivFB.Lost
	iv := Interval{
		Flow: s.flow, Label: s.label, T: float64(now) / 1e6, Dur: d.Seconds(),
		SentBps: bps(s.ivSent, d), GoodputBps: bps(s.ackedBytes-s.ivAckedBase, d), PacingBps: info.PacingRate * 8,
		Packets: s.ivPackets, SRTTMs: float64(info.SRTT) / 1e3,
		CEFrac: frac(int64(dc), int64(dr)), LossFrac: frac(int64(max(dl, 0)), int64(dr+max(dl, 0))),
		WindowPkts: info.PacketWindow, Alpha: info.Alpha, ECN: s.ecn.String(), ErrorL4S: s.fellBack,
		ECNFallback: s.ivFailed,
	}
	rttFields(&iv, append([]time.Duration(nil), s.rtt[s.ivRTT:]...))
	if dc == 0 && s.ecn == aqm.ECT1 && !s.fellBack && iv.RTTSamples > 0 {
		// No CE while the RTT rose: a queue that does not mark L4S
		// packets, or marks bleached on the way (which counts cannot
		// show).
		s.rttRise = max(s.rttRise, time.Duration(iv.RTTP50Ms*1e6)-s.minRTT)
	}
	s.ivFailed = ""
	if s.extra != nil {
		s.extra(&iv)
	}
	s.intervals = append(s.intervals, iv)
	if s.report != nil {
		s.report(iv)
	}
	s.ivStart, s.ivPackets, s.ivSent, s.ivRTT, s.ivFB = now, 0, 0, len(s.rtt), s.fb
	s.ivAckedBase = s.ackedBytes
}

// summary returns the run's totals at now.
func (s *sender) summary(now int64) SenderSummary {
	d := time.Duration(now) * time.Microsecond
	v := ECNValidation{Failed: s.failed, RTTRiseNoCE: s.rttRise}
	switch {
	case s.val != nil:
		v.State = s.val.State().String()
		if s.failed != "" {
			v.At = time.Duration(s.failedAt) * time.Microsecond
		}
	case s.noVal:
		v.State = "off"
	default:
		v.State = "classic"
	}
	return SenderSummary{
		Label: s.label, ECN: s.ecn.String(), FellBack: s.fellBack, Duration: d, Validation: v,
		PacketsSent: s.packetsSent, BytesSent: s.bytesSent, AckedBytes: s.ackedBytes,
		Received: int64(s.fb.Received), CE: int64(s.fb.CE), Lost: int64(s.fb.Lost), Timeouts: s.timeouts,
		RTT: s.rtt, RTTAt: s.rttAt,
		GoodputBps:   bps(s.ackedBytes, d),
		CEFraction:   frac(int64(s.fb.CE), int64(s.fb.Received)),
		LossFraction: frac(int64(s.fb.Lost), int64(s.fb.Received+s.fb.Lost)),
		Intervals:    s.intervals,
	}
}
