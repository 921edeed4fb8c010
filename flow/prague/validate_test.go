package prague

import (
	"math/rand/v2"
	"testing"

	"github.com/pi2hop/pi2hop/aqm"
)

// pathFault is what a faulty middlebox does to a packet sent with
// codepoint sent that the path delivers as got (CE when a queue marked
// it): the codepoint that arrives, or drop.
type pathFault func(sent, got aqm.ECN) (aqm.ECN, bool)

// The path faults of the ECN-fault issue, on one packet. ce-bleach restores
// the codepoint the packet was sent with.
var pathFaults = map[string]pathFault{
	"none":   func(_, got aqm.ECN) (aqm.ECN, bool) { return got, false },
	"bleach": func(_, _ aqm.ECN) (aqm.ECN, bool) { return aqm.NotECT, false },
	// The whole ToS byte zeroed: to the ECN field the same as bleach.
	"tos-zero": func(_, _ aqm.ECN) (aqm.ECN, bool) { return aqm.NotECT, false },
	"ect1-to-ect0": func(_, got aqm.ECN) (aqm.ECN, bool) {
		if got == aqm.ECT1 {
			return aqm.ECT0, false
		}
		return got, false
	},
	"ect0-to-ect1": func(_, got aqm.ECN) (aqm.ECN, bool) {
		if got == aqm.ECT0 {
			return aqm.ECT1, false
		}
		return got, false
	},
	"ce-bleach": func(sent, got aqm.ECN) (aqm.ECN, bool) {
		if got == aqm.CE {
			return sent, false
		}
		return got, false
	},
	"mangle": func(_, got aqm.ECN) (aqm.ECN, bool) {
		if got != aqm.NotECT {
			return aqm.CE, false
		}
		return got, false
	},
	"drop-ect": func(_, got aqm.ECN) (aqm.ECN, bool) { return got, got != aqm.NotECT },
}

// valPath is the validation test's network: one packet a millisecond, a
// 20 ms base RTT, an ACK per arrived packet (type 17: cumulative counts),
// and before the fault a queue that may CE-mark (with its sojourn added
// to the RTT) and lose packets at random.
type valPath struct {
	fault     pathFault
	faultFrom int32 // first sequence number the fault applies to
	// queue returns the sojourn (µs) of packet seq, sent with codepoint
	// sent, and whether the queue CE-marks it; nil: no queue.
	queue func(seq int32, sent aqm.ECN) (int64, bool)
	loss  float64
	rng   *rand.Rand
	// drop, if not nil, says which packets the path loses whatever their
	// codepoint (an outage).
	drop func(seq int32) bool
}

type valResult struct {
	failed      bool
	reason      ECNReason
	at          int64 // µs of the failure
	firstFault  int64 // µs of the first feedback on a faulted packet (or, with none, -1)
	sentECT     int64 // ECT packets sent
	stallAt     int64 // µs of the stall, 0 if none
	capableSeen bool
}

// runValidation sends n packets marked by v through p, feeding v the
// feedback, and stalls it (as the sender's timeout) after 1 s without an
// ACK.
func runValidation(v *Validator, p valPath, n int32) valResult {
	type ack struct {
		at, rtt int64
		seq     int32
		fb      ECNFeedback
	}
	var (
		acks   []ack
		counts ECNCounts
		recv   int64
		lost   int64
		next   int32 = 1 // receiver's next expected
		r            = valResult{firstFault: -1}
		lastFB int64
	)
	feed := func(upTo int64) {
		for len(acks) > 0 && acks[0].at <= upTo {
			a := acks[0]
			acks = acks[1:]
			v.RTT(a.at, a.rtt)
			v.Acked(a.seq)
			if a.seq >= p.faultFrom && r.firstFault < 0 {
				r.firstFault = a.at
			}
			lastFB = a.at
			if v.Feedback(a.at, a.fb) && !r.failed {
				r.failed = true
				r.reason, r.at = v.Failure()
			}
			if v.State() == ValidCapable {
				r.capableSeen = true
			}
		}
	}
	for seq := int32(1); seq <= n; seq++ {
		now := int64(seq) * 1000
		feed(now)
		if now-lastFB >= TimeoutAfter && r.stallAt == 0 && !r.failed {
			v.Stalled()
			r.stallAt, lastFB = now, now
		}
		sent := v.Send(seq)
		if sent != aqm.NotECT {
			r.sentECT++
		}
		got, soj := sent, int64(0)
		if p.queue != nil {
			var mark bool
			soj, mark = p.queue(seq, sent)
			if mark && sent != aqm.NotECT {
				got = aqm.CE
			}
		}
		if (p.loss > 0 && p.rng.Float64() < p.loss) || (p.drop != nil && p.drop(seq)) {
			continue
		}
		if seq >= p.faultFrom {
			var drop bool
			if got, drop = p.fault(sent, got); drop {
				continue
			}
		}
		// The receiver (flow's ackState): gaps count as lost.
		lost += int64(seq - next)
		next = seq + 1
		recv++
		switch got {
		case aqm.ECT0:
			counts.ECT0++
		case aqm.ECT1:
			counts.ECT1++
		case aqm.CE:
			counts.CE++
		}
		rtt := 20000 + soj
		acks = append(acks, ack{at: now + rtt, rtt: rtt, seq: seq,
			fb: ECNFeedback{Received: recv, Lost: lost, Counts: counts, HasCounts: true}})
	}
	feed(int64(n)*1000 + 1e6)
	return r
}

// stepQueue is a DualPI2 L queue under an L4S flow at the step: its
// sojourn saws between 0.2 and 3.2 ms, 30 packets up and 30 down, and
// the step marks every packet above 1 ms, which makes runs of some 45
// packets all CE, 24 % left unmarked. An ECT(0) packet goes to the
// Classic queue, empty.
func stepQueue(seq int32, sent aqm.ECN) (int64, bool) {
	if sent == aqm.ECT0 {
		return 0, false
	}
	ph := int64(seq % 60)
	if ph >= 30 {
		ph = 60 - ph
	}
	soj := 200 + ph*100
	return soj, soj > 1000
}

// For each fault, from the first packet and from packet 200 on (after the
// path was validated), the validator's verdict, worked out from RFC 9000
// §13.4.2 on the packets the fault touches (one packet a millisecond, a
// 20 ms RTT, so packet s's ACK arrives at s+20 ms):
//   - bleach, tos-zero: the first faulted packet's ACK counts it nowhere
//     while the sender knows it arrived sent ECT(1): bleached, at that
//     first feedback;
//   - ect1-to-ect0: its ECT(0) count (1) exceeds the ECT(0) packets sent
//     (0): re-marked, at the first feedback; ect0-to-ect1 the same for a
//     sender of ECT(0);
//   - mangle from the start: the first 10 test packets all CE, at the 10th
//     ACK (30 ms), make the run suspect; packets 30 to 39 go as ECT(0)
//     probes, come back CE too, the last ACKed at 59 ms; from packet 200:
//     a run of all-CE ACKs at the minimum RTT without loss from 220 ms,
//     suspect once it holds 10 packets over half a smoothed RTT (11
//     packets at 230 ms), probes 230 to 239, the last ACKed at 259 ms;
//   - drop-ect from the start: the 10 test packets lost, packet 11 (sent
//     Not-ECT while their fate is unknown) arrives, its ACK at 31 ms;
//     each of the five more rounds' test packet (31, 52, 73, 94, 115) is
//     lost too and the next ACKed 21 ms later, the last at 136 ms;
//     from packet 200: no ACK after 219 ms, the sender stalls 1 s later
//     and re-tests with the packet it sends then, 1219 (ECT, lost), and
//     1220 (Not-ECT, ACKed at 1240 ms), then five more rounds the same
//     (1240, 1261, 1282, 1303, 1324, lost), the last ACK at 1345 ms;
//   - ce-bleach and none: never (the counts are valid; a queue that marks
//     would make ce-bleach's RTT rise, which the counts cannot show).
func TestValidatorFaults(t *testing.T) {
	tests := []struct {
		fault  string
		ecn    aqm.ECN // codepoint the sender validates
		from   int32
		reason ECNReason // ReasonNone: never fails
		at     int64     // ms
	}{
		{"none", aqm.ECT1, 1, ReasonNone, 0},
		{"bleach", aqm.ECT1, 1, ReasonBleached, 21},
		{"bleach", aqm.ECT1, 200, ReasonBleached, 220},
		{"tos-zero", aqm.ECT1, 1, ReasonBleached, 21},
		{"tos-zero", aqm.ECT1, 200, ReasonBleached, 220},
		{"ect1-to-ect0", aqm.ECT1, 1, ReasonRemarked, 21},
		{"ect1-to-ect0", aqm.ECT1, 200, ReasonRemarked, 220},
		{"ect0-to-ect1", aqm.ECT0, 1, ReasonRemarked, 21},
		{"ect0-to-ect1", aqm.ECT0, 200, ReasonRemarked, 220},
		{"ect0-to-ect1", aqm.ECT1, 1, ReasonNone, 0}, // an ECT(1) sender's packets are untouched
		{"mangle", aqm.ECT1, 1, ReasonMangled, 59},
		{"mangle", aqm.ECT1, 200, ReasonMangled, 259},
		{"drop-ect", aqm.ECT1, 1, ReasonECTDropped, 136},
		{"drop-ect", aqm.ECT1, 200, ReasonECTDropped, 1345},
		{"ce-bleach", aqm.ECT1, 1, ReasonNone, 0},
	}
	for _, tt := range tests {
		v := NewValidator(tt.ecn)
		r := runValidation(v, valPath{fault: pathFaults[tt.fault], faultFrom: tt.from}, 3000)
		name := tt.fault
		if r.reason != tt.reason || r.at != tt.at*1000 {
			t.Errorf("%s from packet %d, sender %v: failed %v, reason %q at %.1f ms; want %q at %d ms",
				name, tt.from, tt.ecn, r.failed, r.reason, float64(r.at)/1000, tt.reason, tt.at)
			continue
		}
		if tt.reason == ReasonNone {
			if v.State() != ValidCapable {
				t.Errorf("%s: state %v at the end, want capable", name, v.State())
			}
			continue
		}
		if tt.from > 1 && tt.reason != ReasonECTDropped {
			// Within 3 RTTs of the first feedback on a faulted packet.
			if d := r.at - r.firstFault; d > 3*20000 {
				t.Errorf("%s from packet %d: detected %.1f ms after the first affected feedback, want within 3 RTTs (60 ms)", name, tt.from, float64(d)/1000)
			}
		}
		if tt.from > 1 && !r.capableSeen {
			t.Errorf("%s from packet %d: never validated before the fault", name, tt.from)
		}
		// After the failure, Not-ECT for good.
		for seq := int32(5000); seq < 5010; seq++ {
			if e := v.Send(seq); e != aqm.NotECT {
				t.Fatalf("%s: packet sent %v after failing, want Not-ECT", name, e)
			}
		}
	}
}

// Congestion is not a fault: under DualPI2's step marking (runs of 45
// packets all CE, with the queue in their RTT), with random loss of 1 %
// and 5 % besides, and CE bleaching after such a queue, the validator
// never fails over 60 s of packets.
func TestValidatorCongestionIsNoFault(t *testing.T) {
	for _, tt := range []struct {
		name  string
		fault string
		loss  float64
	}{
		{"step marking", "none", 0},
		{"step marking, 1% loss", "none", 0.01},
		{"step marking, 5% loss", "none", 0.05},
		{"random loss 5%, no queue", "none", 0.05},
		{"step marking, CE bleached after the queue", "ce-bleach", 0.01},
	} {
		p := valPath{fault: pathFaults[tt.fault], faultFrom: 1, queue: stepQueue, loss: tt.loss, rng: rand.New(rand.NewPCG(7, 11))}
		if tt.name == "random loss 5%, no queue" {
			p.queue = nil
		}
		v := NewValidator(aqm.ECT1)
		r := runValidation(v, p, 60000)
		if r.failed || v.State() != ValidCapable {
			t.Errorf("%s: failed %v (%q at %.1f ms), state %v; want capable throughout", tt.name, r.failed, r.reason, float64(r.at)/1000, v.State())
		}
	}
}

// All CE with the RTT at its minimum and no loss is mangling; all CE with
// a queue in the RTT (step marking above 1 ms of sojourn) is not, and
// neither is all CE with loss (DualPI2 in overload drops too), from the
// start or later.
func TestValidatorMangleNeedsBaseRTT(t *testing.T) {
	all := func(soj int64) func(int32, aqm.ECN) (int64, bool) {
		return func(int32, aqm.ECN) (int64, bool) { return soj, true }
	}
	for _, tt := range []struct {
		name   string
		queue  func(int32, aqm.ECN) (int64, bool)
		loss   float64
		failed bool
	}{
		{"all CE at the base RTT", all(0), 0, true},
		{"all CE with 1.2 ms of queue", func(seq int32, sent aqm.ECN) (int64, bool) {
			if seq < 100 || sent == aqm.ECT0 { // the first packets unmarked, with no queue: the minimum
				return 0, false
			}
			return 1200, true
		}, 0, false},
		{"all CE with 10% loss (overload)", func(seq int32, _ aqm.ECN) (int64, bool) { return 0, seq >= 100 }, 0.10, false},
		{"all CE from the start with 30% loss (overload)", all(0), 0.30, false},
	} {
		p := valPath{fault: pathFaults["none"], faultFrom: 1, queue: tt.queue, loss: tt.loss, rng: rand.New(rand.NewPCG(1, 2))}
		r := runValidation(NewValidator(aqm.ECT1), p, 5000)
		if r.failed != tt.failed || (tt.failed && r.reason != ReasonMangled) {
			t.Errorf("%s: failed %v (%q); want failed %v", tt.name, r.failed, r.reason, tt.failed)
		}
	}
}

// DualPI2's coupling is no mangling: with the Classic queue's p' at 1/k
// or just under it, every L4S packet (ECT(1)) is marked with k·p', close
// to 1, at the base RTT (the L queue empty) and without loss, while a
// Classic packet (ECT(0)) is marked with p'^2, at most 1/4 (RFC 9332
// §2.4, k = 2), after the Classic queue's 15 ms. Over 60 s the run turns
// suspect again and again; each round of 10 probes comes back with at
// least one ECT(0) (all CE has a chance of 4^-10), so the validator
// never fails. A mangler (every ECT packet CE, the probes too) fails.
func TestValidatorCouplingIsNoMangling(t *testing.T) {
	for _, tt := range []struct {
		name   string
		pL     float64 // L4S marking probability, k·p'
		fault  string
		failed bool
	}{
		{"k·p' = 0.95", 0.95, "none", false},
		{"k·p' = 0.99", 0.99, "none", false},
		{"k·p' = 1", 1, "none", false},
		{"k·p' = 1, mangled after the queue", 1, "mangle", true},
	} {
		rng := rand.New(rand.NewPCG(3, 5))
		coupled := func(_ int32, sent aqm.ECN) (int64, bool) {
			if sent == aqm.ECT0 {
				pC := tt.pL / 2 * tt.pL / 2
				return 15000, rng.Float64() < pC
			}
			return 0, rng.Float64() < tt.pL
		}
		v := NewValidator(aqm.ECT1)
		r := runValidation(v, valPath{fault: pathFaults[tt.fault], faultFrom: 1, queue: coupled}, 60000)
		t.Logf("%s: %d rounds of probes; failed %v %q at %.1f ms", tt.name, v.confRounds, r.failed, r.reason, float64(r.at)/1000)
		if r.failed != tt.failed || (tt.failed && r.reason != ReasonMangled) {
			t.Errorf("%s: failed %v (%q at %.1f ms); want failed %v", tt.name, r.failed, r.reason, float64(r.at)/1000, tt.failed)
		}
		if !tt.failed && v.confRounds == 0 {
			t.Errorf("%s: never probed: the case does not test the probes", tt.name)
		}
	}
}

// Counts that go down, on a newer feedback, fail at once; an older
// feedback arriving late is ignored.
func TestValidatorDecreasingCounts(t *testing.T) {
	v := NewValidator(aqm.ECT1)
	for seq := int32(1); seq <= 3; seq++ {
		v.Send(seq)
	}
	v.Acked(1)
	v.Acked(2)
	if v.Feedback(1000, ECNFeedback{Received: 2, HasCounts: true, Counts: ECNCounts{ECT1: 2}}) {
		t.Fatal("valid counts failed")
	}
	if v.Feedback(1100, ECNFeedback{Received: 1, HasCounts: true, Counts: ECNCounts{ECT1: 1}}) {
		t.Fatal("an older feedback, reordered, failed validation")
	}
	v.Acked(3)
	if !v.Feedback(1200, ECNFeedback{Received: 3, HasCounts: true, Counts: ECNCounts{ECT1: 1, CE: 2}}) {
		t.Fatal("ECT(1) count 2 then 1 on a newer feedback did not fail")
	}
	if r, at := v.Failure(); r != ReasonDecreased || at != 1200 {
		t.Errorf("failure %q at %d, want counts-decreased at 1200", r, at)
	}
}

// A udp_prague receiver sends no counts: its error_L4S, set on a packet
// that arrived neither ECT(1) nor CE, ends ECT(1) as udp_prague's sender
// does; without it the path stays in use.
func TestValidatorReceiverWithoutCounts(t *testing.T) {
	v := NewValidator(aqm.ECT1)
	v.Send(1)
	v.Acked(1)
	if v.Feedback(1000, ECNFeedback{Received: 1}) {
		t.Fatal("no counts and no error_L4S failed validation")
	}
	v.Send(2)
	v.Acked(2)
	if !v.Feedback(2000, ECNFeedback{Received: 2, ErrorL4S: true}) {
		t.Fatal("error_L4S from a receiver without counts did not fail validation")
	}
	if r, _ := v.Failure(); r != ReasonErrorL4S {
		t.Errorf("reason %q, want error-l4s", r)
	}
}

// A receiver that starts late loses the first 10 packets whatever their
// codepoint: the first round's test packets all lost is no verdict, and
// the second round's test packet arrives, so the path is capable. A
// receiver without counts (udp_prague's) settles the test rounds from the
// packets it acknowledges.
func TestValidatorLateReceiver(t *testing.T) {
	v := NewValidator(aqm.ECT1)
	for seq := int32(1); seq <= 12; seq++ {
		v.Send(seq) // 1..10 lost (no receiver yet), 11 and 12 Not-ECT
	}
	v.Acked(11)
	if v.Feedback(100, ECNFeedback{Received: 1, Lost: 10, HasCounts: true}) {
		t.Fatal("the first round lost whole failed validation at once")
	}
	if s := v.State(); s != ValidTesting {
		t.Fatalf("state %v after the first round was lost, want testing (a second round)", s)
	}
	if e := v.Send(13); e != aqm.ECT1 {
		t.Fatalf("second round's test packet %v, want ECT(1)", e)
	}
	v.Acked(13)
	if v.Feedback(200, ECNFeedback{Received: 2, Lost: 11, HasCounts: true, Counts: ECNCounts{ECT1: 1}}) || v.State() != ValidCapable {
		t.Errorf("second round's test packet arrived: state %v, want capable", v.State())
	}

	v = NewValidator(aqm.ECT1)
	for seq := int32(1); seq <= 11; seq++ {
		v.Send(seq)
	}
	if v.State() != ValidUnknown {
		t.Fatalf("state %v after 10 unacknowledged test packets, want unknown", v.State())
	}
	v.Acked(3)
	if v.Feedback(100, ECNFeedback{Received: 3}) || v.State() != ValidCapable {
		t.Errorf("receiver without counts ACKed a test packet: state %v, want capable", v.State())
	}
}

// An outage is not a filter: every packet from 200 ms to 1.7 s lost. The
// sender stalls at 1219 ms and re-tests; the first round's test packet
// (1219) is lost with everything else, and the Not-ECT packet that comes
// through first (1700, ACKed at 1720 ms) ends that round; the second
// round's test packet (1720) arrives, and the path is capable again.
func TestValidatorOutageIsNoFault(t *testing.T) {
	v := NewValidator(aqm.ECT1)
	r := runValidation(v, valPath{fault: pathFaults["none"], faultFrom: 1,
		drop: func(seq int32) bool { return seq >= 200 && seq < 1700 }}, 3000)
	if r.failed || v.State() != ValidCapable || r.stallAt != 1219000 {
		t.Errorf("outage from 200 ms to 1.7 s: failed %v (%q at %.1f ms), stalled at %.1f ms, state %v; want a stall at 1219 ms and capable after",
			r.failed, r.reason, float64(r.at)/1000, float64(r.stallAt)/1000, v.State())
	}
}
