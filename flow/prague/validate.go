package prague

import (
	"math"

	"github.com/pi2hop/pi2hop/aqm"
)

// ECN validation, as RFC 9000 §13.4.2 has a QUIC sender do it, for a
// sender that learns its peer's per-codepoint counts (ACK_ECN's ECT(0),
// ECT(1) and CE) and which of its packets arrived. A path that bleaches,
// re-marks, mangles or drops ECN-marked packets makes an L4S sender either
// blind to congestion or a danger to the Classic queue; once the counts
// show such a path, the sender stops setting ECT for good and responds to
// loss only (FallBack on the controller).
//
// The checks, on every feedback (quic-go's names in brackets):
//   - counts that go down on a newer feedback: counts-decreased
//     [DecreasedECNCounts];
//   - more CE than packets sent ECN-capable (Not-ECT turned CE): mangled
//     [MoreECNCountsThanSent for CE];
//   - the first test packets, or a run of packets at the path's minimum
//     RTT, all CE without loss, and then every one of a round of ECT(0)
//     probes CE as well: mangled [ManglingDetected, which stops at the
//     first condition];
//   - a count of a codepoint above the packets sent with it, or
//     ECT(x) + CE below the packets sent as ECT(x) known to have arrived
//     while the sum of all counts covers them: re-marked
//     [MoreECNCountsThanSent, TooFewECNCounts];
//   - the sum of all counts below the ECN-capable packets known to have
//     arrived (some arrived Not-ECT; no counts at all is the same case):
//     bleached [NoECNCounts, TooFewECNCounts];
//   - every test packet lost while a Not-ECT packet sent after them
//     arrived: ect-dropped [LostAllTestingPackets].
//
// Testing: the first TestPackets packets are ECN-capable; if none of them
// is known to have arrived by the time the last one is sent, the next
// ones go Not-ECT until the test packets' fate is known (as RFC 9000's
// "unknown" state: without Not-ECT packets getting through, a path that
// drops every ECT packet looks like a dead path). If they were all lost,
// more rounds of one ECT packet follow before the verdict, so that a
// receiver that started late or an outage that ended between two
// packets is not taken for a filter. When the sender stalls (no feedback
// for its timeout) the path may have changed: it re-tests the same way,
// with rounds of one ECT packet. Where ECT and Not-ECT packets are lost
// alike (DualPI2 in overload drops both with p'^2), a round looks like
// a filter (its ECT packet lost, the Not-ECT one after it not) with a
// chance of at most 1/4, so retestRounds of them, all such, are needed.
//
// Why the ECT(0) probes: an ECT(1) flow all CE at the base RTT without
// loss is what a mangling middlebox makes, but also what DualPI2's
// coupling makes while the Classic queue's p' is just under 1/k (the L
// queue empty, every L4S packet marked with k·p' close to 1; past 1/k
// it is in overload and drops L4S packets too). There a Classic packet
// is marked with p'^2, at most 1/4 (RFC 9332 §2.4, k = 2), so a round of
// probePackets ECT(0) probes comes back all CE with a chance under
// 4^-probePackets; through a mangler, always. A sender validating ECT(0)
// has no such coupling to fear (a Classic packet is only marked with
// p'^2 = 1 in overload, where it is dropped), and fails at once.

// ECNReason says why validation failed.
type ECNReason uint8

// Reasons of a failed validation.
const (
	ReasonNone       ECNReason = iota
	ReasonBleached             // ECT packets arrived Not-ECT (ECN bits or the whole ToS byte cleared)
	ReasonRemarked             // ECT packets arrived with the other ECT codepoint
	ReasonMangled              // CE on packets that were not ECN-capable, or on every packet with no queue to explain it
	ReasonDecreased            // a newer feedback carried smaller counts
	ReasonECTDropped           // every ECT test packet was lost, Not-ECT ones were not
	ReasonErrorL4S             // a receiver without counts (udp_prague's) reported error_L4S
)

func (r ECNReason) String() string {
	names := [...]string{"", "bleached", "re-marked", "mangled", "counts-decreased", "ect-dropped", "error-l4s"}
	if int(r) < len(names) {
		return names[r]
	}
	return "unknown"
}

// ValidationState is where a Validator stands.
type ValidationState uint8

// States of a Validator.
const (
	ValidTesting ValidationState = iota // sending ECT test packets
	ValidUnknown                        // tests sent, fate unknown: sending Not-ECT
	ValidCapable                        // the path keeps ECN: sending ECT, still checking every feedback
	ValidFailed                         // the path interferes: Not-ECT for good
)

func (s ValidationState) String() string {
	if names := [...]string{"testing", "unknown", "capable", "failed"}; int(s) < len(names) {
		return names[s]
	}
	return "unknown"
}

// Validation constants.
const (
	TestPackets  = 10 // ECT test packets at the start (RFC 9000 §13.4.2.1's example)
	retestRounds = 6  // rounds of one ECT packet after a stall, all lost, before ect-dropped
	// A run of at least mangleRun ECT packets, all CE, over at least half
	// a smoothed RTT, without loss (an overloaded DualPI2 that marks every
	// L4S packet also drops), with an RTT sample within stepMargin of the
	// path's minimum, is suspect of mangling, and a round of probePackets
	// ECT(0) probes decides (see above); the probes get probeWait smoothed
	// RTTs plus probeSlack to come back, since they may wait in the
	// Classic queue. The RTT condition only keeps probing rare: a queue
	// that marks every packet (DualPI2's L4S step, above 1 ms of sojourn)
	// puts about that much above the base into every RTT of the run,
	// while a mangler marks at the base RTT once the sender's own queue
	// has drained.
	mangleRun    = 10
	stepMargin   = 1000 // µs
	probePackets = 10
	probeWait    = 4
	probeSlack   = 200_000 // µs
	// After a round of probes clears a suspect run, the next run must
	// last twice as long, up to 2^maxBackoff times, until backoffReset
	// passes with no round cleared.
	maxBackoff   = 4
	backoffReset = 2_000_000 // µs
)

// ECNCounts are the receiver's cumulative counts of arrived packets by
// codepoint, as QUIC's ACK_ECN frame carries them.
type ECNCounts struct {
	ECT0, ECT1, CE int64
}

func (c ECNCounts) sum() int64 { return c.ECT0 + c.ECT1 + c.CE }

// ECNFeedback is what one feedback message tells the validator besides
// the packets it acknowledges (Acked).
type ECNFeedback struct {
	Received  int64 // the receiver's cumulative received count: orders feedback
	Lost      int64 // the receiver's cumulative lost count
	Counts    ECNCounts
	HasCounts bool // the feedback carried counts (a udp_prague receiver's does not)
	ErrorL4S  bool // the receiver's own flag: a packet arrived neither ECT(1) nor CE
}

// Validator checks the echoed counts for one sender. It is not safe for
// concurrent use; times are µs.
type Validator struct {
	ecn    aqm.ECN // the codepoint validated: ECT(1) for Prague
	state  ValidationState
	reason ECNReason
	at     int64 // µs of the failure

	sentAs [1 << 16]uint8 // codepoint of each sequence number (mod 2^16), bit 2 once acked
	sent   [4]int64       // packets sent by codepoint
	acked  [4]int64       // packets known to have arrived, by the codepoint they were sent with

	last     ECNCounts
	lastRecv int64
	counted  bool // some feedback carried counts

	// The current test round.
	need       int   // ECT test packets in the round
	testSent   int   // of which sent
	first      int32 // sequence number of its first test packet
	lastTest   int32 // and of its last
	testAcked  int   // test packets known to have arrived
	probeAcked bool  // a Not-ECT packet sent after the tests arrived
	base       int64 // counts' sum when the round began
	lostRounds int   // rounds in a row whose tests were all lost
	rounds     int   // such rounds that fail validation

	// The run of ECT packets acknowledged all CE.
	run       int64 // packets in it
	runStart  int64 // µs
	runLost   int64 // receiver's lost count when it began
	runMinRTT int64 // µs, smallest RTT sample during it
	runFirst  bool  // it began with the flow's first acknowledged ECT packet
	ackedECT  int64 // ECT packets acknowledged as of the last feedback

	// The ECT(0) probes that confirm a suspect run.
	confLeft   int   // still to send
	confSent   int   // sent
	confAcked  int   // known to have arrived
	confFirst  int32 // sequence number of the first
	confStart  int64 // µs the round began
	confRounds int   // rounds of probes sent
	backoff    uint  // a suspect run must last srtt/2 << backoff
	clearedAt  int64 // µs a round of probes last came back with ECT(0)

	// The path's minimum RTT over the last minWindow to 2·minWindow
	// (two buckets, so that it follows a change of packet size, whose
	// serialisation is in every sample, or of route), and the smoothed
	// RTT; µs.
	minRTT, minPrev, minAt, srtt int64
}

// minWindow is the age of the older bucket of the windowed minimum RTT.
const minWindow = 5_000_000 // µs

// NewValidator validates codepoint e (ECT(1) or ECT(0)) from the start.
func NewValidator(e aqm.ECN) *Validator {
	v := &Validator{ecn: e, minRTT: math.MaxInt64, minPrev: math.MaxInt64, runMinRTT: math.MaxInt64}
	v.startRound(TestPackets, retestRounds)
	return v
}

func (v *Validator) startRound(need, rounds int) {
	v.state = ValidTesting
	v.need, v.testSent, v.testAcked, v.probeAcked = need, 0, 0, false
	v.rounds = rounds
	v.base = v.last.sum()
}

// State returns the validator's state.
func (v *Validator) State() ValidationState { return v.state }

// Failure returns why and when (µs) validation failed; ReasonNone while it
// has not.
func (v *Validator) Failure() (ECNReason, int64) { return v.reason, v.at }

// Next returns the codepoint for the next packet: the one Send will
// record for it.
func (v *Validator) Next() aqm.ECN {
	switch {
	case v.state != ValidTesting && v.state != ValidCapable:
		return aqm.NotECT
	case v.confLeft > 0:
		return aqm.ECT0
	}
	return v.ecn
}

// Send returns the codepoint for packet seq, sent now, and records it.
// Sequence numbers are consecutive from 1.
func (v *Validator) Send(seq int32) aqm.ECN {
	e := v.Next()
	switch {
	case v.confLeft > 0 && e == aqm.ECT0:
		if v.confSent == 0 {
			v.confFirst = seq
		}
		v.confSent++
		v.confLeft--
	case v.state == ValidTesting:
		if v.testSent == 0 {
			v.first = seq
		}
		v.lastTest = seq
		v.testSent++
		if v.testSent >= v.need {
			v.state = ValidUnknown
			if v.testAcked > 0 {
				v.pass()
			}
		}
	}
	v.sentAs[uint16(seq)] = uint8(e)
	v.sent[e]++
	return e
}

// Acked records that packet seq arrived (an ACK of it, or a block report
// saying so). Repeats are ignored.
func (v *Validator) Acked(seq int32) {
	s := &v.sentAs[uint16(seq)]
	if *s&4 != 0 {
		return
	}
	*s |= 4
	e := aqm.ECN(*s & 3)
	v.acked[e]++
	if v.confSent > 0 && e == aqm.ECT0 && seq-v.confFirst >= 0 && int(seq-v.confFirst) < v.confSent {
		v.confAcked++
	}
	if v.state != ValidTesting && v.state != ValidUnknown {
		return
	}
	if seq-v.first >= 0 && seq-v.lastTest <= 0 && e != aqm.NotECT {
		v.testAcked++
	} else if seq-v.lastTest > 0 && e == aqm.NotECT && v.testSent >= v.need {
		v.probeAcked = true
	}
}

// RTT takes a round-trip sample (µs) of the path, taken at now.
func (v *Validator) RTT(now, rtt int64) {
	rtt = max(rtt, 1)
	if now-v.minAt >= minWindow {
		v.minPrev, v.minRTT, v.minAt = v.minRTT, math.MaxInt64, now
	}
	v.minRTT = min(v.minRTT, rtt)
	if v.srtt == 0 {
		v.srtt = rtt
	} else {
		v.srtt += (rtt - v.srtt) / 8
	}
	if v.run > 0 {
		v.runMinRTT = min(v.runMinRTT, rtt)
	}
}

// Stalled says the sender heard nothing for its timeout while it had
// packets in flight: the path may have changed, so test it again.
func (v *Validator) Stalled() {
	if v.state == ValidFailed {
		return
	}
	v.lostRounds = 0
	v.endRun()
	v.startRound(1, retestRounds)
}

// Feedback checks one feedback message at now, after Acked for the
// packets it acknowledges, and reports whether validation has failed
// (now or before). A feedback older than the newest seen is ignored.
func (v *Validator) Feedback(now int64, f ECNFeedback) bool {
	if v.state == ValidFailed {
		return true
	}
	if f.Received < v.lastRecv {
		return false
	}
	v.lastRecv = f.Received
	if !f.HasCounts {
		if !v.counted && f.ErrorL4S && v.sent[v.ecn] > 0 {
			// A udp_prague receiver counts only CE; its error_L4S is
			// its own check, and udp_prague's sender stops ECT(1) on it.
			v.fail(now, ReasonErrorL4S)
			return true
		}
		if v.state == ValidUnknown {
			v.settle(now)
		}
		return v.state == ValidFailed
	}
	v.counted = true
	if r := v.check(f.Counts); r != ReasonNone {
		v.fail(now, r)
		return true
	}
	if v.mangled(now, f) {
		v.fail(now, ReasonMangled)
		return true
	}
	v.last = f.Counts
	if v.state == ValidUnknown {
		v.settle(now)
	}
	return v.state == ValidFailed
}

// check returns the reason the counts c betray a faulty path, if any.
func (v *Validator) check(c ECNCounts) ECNReason {
	switch {
	case c.ECT0 < v.last.ECT0 || c.ECT1 < v.last.ECT1 || c.CE < v.last.CE:
		return ReasonDecreased
	case c.CE > v.sent[aqm.ECT0]+v.sent[aqm.ECT1]+v.sent[aqm.CE]:
		return ReasonMangled
	case c.ECT0 > v.sent[aqm.ECT0] || c.ECT1 > v.sent[aqm.ECT1]:
		return ReasonRemarked
	case c.sum() < v.acked[aqm.ECT0]+v.acked[aqm.ECT1]+v.acked[aqm.CE]:
		return ReasonBleached
	case c.ECT0+c.CE < v.acked[aqm.ECT0] || c.ECT1+c.CE < v.acked[aqm.ECT1]:
		return ReasonRemarked
	}
	return ReasonNone
}

// mangled follows the run of ECT packets acknowledged all CE and says
// whether it shows mangling rather than congestion: a suspect run (see
// mangleRun), then, for an ECT(1) sender, a round of ECT(0) probes all
// CE too. Any ECT packet that arrives unmarked ends the run and its
// probes: a mangler marks every one.
func (v *Validator) mangled(now int64, f ECNFeedback) bool {
	acked := v.acked[aqm.ECT0] + v.acked[aqm.ECT1]
	if n := acked - v.ackedECT; n > 0 {
		dCE := f.Counts.CE - v.last.CE
		first := v.ackedECT == 0
		v.ackedECT = acked
		if dCE < n || f.Counts.ECT0+f.Counts.ECT1 != v.last.ECT0+v.last.ECT1 {
			if v.confSent > 0 {
				// Cleared by the probes: while the coupling keeps
				// marking every L4S packet, wait longer before the next
				// round, so that probes stay a small share of the flow.
				v.backoff = min(v.backoff+1, maxBackoff)
				v.clearedAt = now
			}
			v.endRun()
			return false
		}
		if v.run == 0 {
			if now-v.clearedAt > backoffReset {
				v.backoff = 0
			}
			v.runStart, v.runLost, v.runMinRTT, v.runFirst = now, f.Lost, math.MaxInt64, first
		}
		v.run += n
	}
	switch {
	case v.run < mangleRun:
		return false
	case v.confSent+v.confLeft > 0:
		// Probing: every probe that arrived came CE (else the run would
		// have ended); all of them, without loss, confirm it.
		if v.confLeft == 0 && v.confAcked == v.confSent {
			return f.Lost == v.runLost
		}
		if now-v.confStart > probeWait*v.srtt+probeSlack {
			v.endRun() // probes lost or stuck: the run proves nothing
		}
		return false
	case f.Lost != v.runLost:
		return false
	case !v.runFirst && (2*(now-v.runStart) < v.srtt<<v.backoff ||
		v.runMinRTT == math.MaxInt64 || v.runMinRTT > min(v.minRTT, v.minPrev)+stepMargin):
		return false
	case v.ecn != aqm.ECT1:
		return true
	}
	v.confLeft, v.confSent, v.confAcked, v.confStart = probePackets, 0, 0, now
	v.confRounds++
	return false
}

// endRun forgets the run of all-CE packets and any probes it sent for.
func (v *Validator) endRun() {
	v.run = 0
	v.confLeft, v.confSent, v.confAcked = 0, 0, 0
}

// settle ends a test round whose packets' fate is known.
func (v *Validator) settle(now int64) {
	switch {
	case v.testAcked > 0 || v.last.sum() > v.base:
		v.pass()
	case v.probeAcked:
		v.lostRounds++
		if v.lostRounds >= v.rounds {
			v.fail(now, ReasonECTDropped)
			return
		}
		v.startRound(1, v.rounds)
	}
}

func (v *Validator) pass() {
	v.state = ValidCapable
	v.lostRounds = 0
}

func (v *Validator) fail(now int64, r ECNReason) {
	v.state, v.reason, v.at = ValidFailed, r, now
}
