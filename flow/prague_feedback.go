package flow

import (
	"fmt"
	"net"
	"net/netip"
	"time"

	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/flow/ecnudp"
	"github.com/pi2hop/pi2hop/flow/wire"
)

// Block (RFC 8888-style, type-18) feedback, as udp_prague's --rfc8888
// (udp_prague_receiver.cpp and pkt_format.h rfc8888ack_t): instead of an
// ACK per packet, the receiver reports every period the packets that
// arrived since the last report, one 16-bit word each (received, ECN,
// arrival time offset), and the sender derives the received / CE / lost
// counters and the RTT samples from them.

// defaultBlockPeriod is udp_prague's RFC8888_ACKPERIOD (app_stuff.h).
const defaultBlockPeriod = 25 * time.Millisecond

// blockRing is how many sequence numbers either end remembers: RFC 8888's
// modulo-65536 arithmetic, udp_prague's PKT_BUFFER_SIZE.
const blockRing = 1 << 16

// reReportFor is how long after its arrival a packet already reported is
// still reported as received when a late packet makes the receiver cover
// its range again (udp_prague's RCV_TIMEOUT).
const reReportFor = 250_000 // µs

// Per-sequence states of the receiver's ring.
const (
	rcvNone     uint8 = iota
	rcvArrived        // arrived, not reported yet
	rcvReported       // reported as received
	rcvMissing        // reported as not received
)

type blockSlot struct {
	at  int64 // µs of arrival
	ecn aqm.ECN
	st  uint8
}

// blockReceiver collects arrivals and writes the periodic reports.
type blockReceiver struct {
	period     int64 // µs
	maxReports int
	active     bool  // start..end holds packets to report
	start, end int32 // the sequence numbers [start, end) go into the next report
	due        int64 // µs: when the next report goes out
	slots      [blockRing]blockSlot
	reports    []wire.BlockReport
	out        []byte
}

func newBlockReceiver(period time.Duration, mtu int) *blockReceiver {
	n := wire.MaxBlockReports(mtu)
	return &blockReceiver{period: period.Microseconds(), maxReports: n,
		reports: make([]wire.BlockReport, 0, n), out: make([]byte, 0, mtu)}
}

// arrived records data packet seq that arrived at now with codepoint e.
func (b *blockReceiver) arrived(now int64, seq int32, e aqm.ECN) {
	switch {
	case !b.active:
		b.start, b.end, b.active = seq, seq+1, true
		if b.due == 0 {
			b.due = now + b.period
		}
	case seq-b.start >= 0 && seq-b.start < blockRing && seq-b.end >= 0:
		b.end = seq + 1
	case seq-b.end < 0 && seq-b.end >= -blockRing && seq-b.start < 0:
		b.start = seq // a late packet: cover it again
	}
	s := &b.slots[uint16(seq)]
	if s.st != rcvArrived {
		*s = blockSlot{at: now, ecn: e, st: rcvArrived}
	} else if e == aqm.CE {
		s.ecn = aqm.CE // a duplicate: CE wins, as in udp_prague
	}
}

// wake returns when the receiver must next run to keep the period, or 0
// when nothing waits to be reported.
func (b *blockReceiver) wake() int64 {
	if !b.active {
		return 0
	}
	return b.due
}

// flush sends, when the period is up (or now, with force), the reports
// of [start, end) in as many messages as the packet size needs.
func (b *blockReceiver) flush(now int64, force bool, send func([]byte) error) error {
	if (now < b.due && !force) || !b.active {
		// (An idle receiver keeps a past due time, so that the first packet
		// after a pause is reported at once, as udp_prague's does.)
		return nil
	}
	for b.active {
		n := min(int(b.end-b.start), b.maxReports)
		a := wire.BlockACK{Begin: b.start, Reports: b.reports[:0]}
		for i := range n {
			s := &b.slots[uint16(b.start+int32(i))]
			if s.st == rcvArrived || (s.st == rcvReported && now-s.at < reReportFor) {
				a.Reports = append(a.Reports, wire.BlockReport{Received: true, ECN: s.ecn, ATO: wire.ATO(now - s.at)})
				s.st = rcvReported
			} else {
				a.Reports = append(a.Reports, wire.BlockReport{})
				s.st = rcvMissing
			}
		}
		b.start += int32(n)
		b.active = b.start != b.end
		b.out = wire.AppendBlockACK(b.out[:0], a)
		if err := send(b.out); err != nil {
			return err
		}
	}
	b.due = now + b.period
	return nil
}

// acker answers a receiver's data packets as it was told to: a type-17
// ACK per packet, or with --rfc8888 (fb set) a place in the next type-18
// block.
//
// In L4S mode the feedback is ECT(1), as udp_prague's, while the data
// comes ECN-capable, and Not-ECT while it comes Not-ECT (a deliberate
// difference from udp_prague): on a path that drops ECT packets both
// ways, ECT(1) ACKs would never reach the sender, whose validation then
// could not learn that its Not-ECT packets get through, and the call
// would die instead of falling back.
type acker struct {
	fb     *blockFeedback // nil: an ACK per packet
	conn   *net.UDPConn
	flow   string
	buf    []byte
	follow bool    // L4S mode: the feedback's codepoint follows the data's
	ecn    aqm.ECN // the socket's codepoint
}

func newAcker(conn *net.UDPConn, flow string, rfc8888 bool, period time.Duration, mtu int, classic bool) acker {
	a := acker{conn: conn, flow: flow, buf: make([]byte, 0, wire.ACKSize), follow: !classic, ecn: aqm.ECT1}
	if classic {
		a.ecn = aqm.NotECT
	}
	if rfc8888 {
		a.fb = newBlockFeedback(conn, flow, period, mtu)
	}
	return a
}

// send answers data packet seq from peer, received at at and read at
// now, whose per-packet ACK is ack.
func (a *acker) send(now, at int64, peer netip.AddrPort, seq int32, e aqm.ECN, ack wire.ACK) error {
	if want := feedbackECN(e); a.follow && want != a.ecn {
		if err := ecnudp.SetECN(a.conn, want); err != nil {
			return fmt.Errorf("%s: %w", a.flow, err)
		}
		a.ecn = want
	}
	if a.fb != nil {
		return a.fb.arrived(now, at, peer, seq, e)
	}
	a.buf = wire.AppendACK(a.buf[:0], ack)
	if _, err := a.conn.WriteToUDPAddrPort(a.buf, peer); err != nil && !isTransient(err) {
		return fmt.Errorf("%s: ACK to %v: %w", a.flow, peer, err)
	}
	return nil
}

// feedbackECN is the codepoint of the feedback for data that arrived as
// e, in L4S mode.
func feedbackECN(e aqm.ECN) aqm.ECN {
	if e == aqm.NotECT {
		return aqm.NotECT
	}
	return aqm.ECT1
}

// blockFeedback is a receiver's block feedback to its current peer; its
// methods do nothing on a nil *blockFeedback (per-packet ACKs).
type blockFeedback struct {
	conn   *net.UDPConn
	flow   string
	period time.Duration
	mtu    int
	peer   netip.AddrPort
	b      *blockReceiver
}

func newBlockFeedback(conn *net.UDPConn, flow string, period time.Duration, mtu int) *blockFeedback {
	return &blockFeedback{conn: conn, flow: flow, period: period, mtu: mtu, b: newBlockReceiver(period, mtu)}
}

// restart forgets the last peer's packets: a new sender, a new flow.
func (f *blockFeedback) restart() {
	if f != nil {
		f.b = newBlockReceiver(f.period, f.mtu)
	}
}

// arrived records a data packet from peer, received by the kernel at at
// (its arrival time offset counts from then, as RFC 8888 §3.1 has it),
// and reports if the period is up at now (udp_prague looks after every
// packet).
func (f *blockFeedback) arrived(now, at int64, peer netip.AddrPort, seq int32, e aqm.ECN) error {
	f.peer = peer
	f.b.arrived(at, seq, e)
	return f.b.flush(now, false, f.send)
}

// tick reports when the period is up, and what is left at the end.
func (f *blockFeedback) tick(now int64, final bool) error {
	if f == nil || !f.peer.IsValid() {
		return nil
	}
	return f.b.flush(now, final, f.send)
}

func (f *blockFeedback) wake() int64 {
	if f == nil {
		return 0
	}
	return f.b.wake()
}

func (f *blockFeedback) send(p []byte) error {
	if _, err := f.conn.WriteToUDPAddrPort(p, f.peer); err != nil && !isTransient(err) {
		return fmt.Errorf("%s: block feedback to %v: %w", f.flow, f.peer, err)
	}
	return nil
}

// Per-sequence states of the sender's ring.
const (
	sndNone uint8 = iota
	sndSent
	sndReceived
	sndLost
)

// blockSender turns block reports into the cumulative counters and RTT
// samples the controller takes.
type blockSender struct {
	sentAt   [blockRing]int64 // µs
	st       [blockRing]uint8
	lastAck  int32 // highest sequence number reported on
	received int32
	ce       int32
	lost     int32
	errorL4S bool
	// Received packets by arrival codepoint: the counts the sender's
	// ECN validation checks (ce above).
	ect0, ect1 int64
	reports    []wire.BlockReport
	rtts       []int64 // µs, scratch
}

func (b *blockSender) sent(now int64, seq int32) {
	b.sentAt[uint16(seq)] = now
	b.st[uint16(seq)] = sndSent
}

// report applies one block at now and returns the RTT samples it gave
// (valid until the next call) and the sequence numbers newly received,
// through each. As udp_prague: packets before the block's start that were
// never reported are lost, a report of a packet counted lost un-loses it,
// and an RTT sample is now − ATO − send time. sent is the highest sequence
// number sent; a block that reports beyond it, or further back than the
// ring remembers, is not from our receiver and is ignored (ok false):
// udp_prague would walk a bogus begin_seq's whole gap.
func (b *blockSender) report(now int64, a wire.BlockACK, sent int32, received func(seq int32)) (rtts []int64, ok bool) {
	last := a.Begin + int32(len(a.Reports)) - 1
	if a.Begin <= 0 || last-sent > 0 || sent-a.Begin >= blockRing {
		return nil, false
	}
	b.rtts = b.rtts[:0]
	for ; b.lastAck+1-a.Begin < 0; b.lastAck++ {
		if i := uint16(b.lastAck + 1); b.st[i] == sndSent {
			b.lost++
			b.st[i] = sndLost
		}
	}
	for k, r := range a.Reports {
		seq := a.Begin + int32(k)
		i := uint16(seq)
		switch {
		case r.Received && (b.st[i] == sndSent || b.st[i] == sndLost):
			if b.st[i] == sndLost {
				b.lost--
			}
			b.st[i] = sndReceived
			b.received++
			switch r.ECN {
			case aqm.CE:
				b.ce++
			case aqm.ECT0:
				b.ect0++
			case aqm.ECT1:
				b.ect1++
			}
			if r.ECN&1 == 0 { // Not-ECT or ECT(0): the path does not keep ECT(1)
				b.errorL4S = true
			}
			// The offset is rounded to 1024 µs, so below about 1 ms of RTT
			// (loopback) a sample can come out at or under 0; udp_prague
			// feeds it to srtt as it is, here it counts as 1 µs.
			b.rtts = append(b.rtts, max(now-wire.ATOMicros(r.ATO)-b.sentAt[i], 1))
			received(seq)
		case !r.Received && b.st[i] == sndSent:
			b.st[i] = sndLost
			b.lost++
		}
	}
	// udp_prague moves its last-acked mark by the number of reports even
	// when a block re-covers older packets, which can skip a later gap;
	// here it only moves forward, to the block's last packet.
	if last-b.lastAck > 0 {
		b.lastAck = last
	}
	return b.rtts, true
}

// feedbackMismatch is the error of a sender that hears the other format
// from its receiver than it was told to expect.
func feedbackMismatch(flow string, got byte) error {
	if got == wire.TypeBlockACK {
		return fmt.Errorf("%s: receiver sends type-%d block feedback: run with --rfc8888", flow, wire.TypeBlockACK)
	}
	return fmt.Errorf("%s: receiver sends type-%d per-packet ACKs: run without --rfc8888", flow, wire.TypeACK)
}
