package aqm

import (
	"math"
	"math/rand/v2"
	"testing"
)

// dualpi2_skb_classify: classification by ECN mask, then Meta.Class.
func TestClassify(t *testing.T) {
	tests := []struct {
		mask   uint8
		ecn    ECN
		filter Class
		want   Class
	}{
		{1, NotECT, Classic, Classic},
		{1, ECT0, Classic, Classic},
		{1, ECT1, Classic, L4S},
		{1, CE, Classic, L4S},
		{3, ECT0, Classic, L4S}, // any_ect
		{3, NotECT, Classic, Classic},
		{2, ECT1, Classic, Classic}, // CLA_ECT: ECT(0) and CE only
		{2, ECT0, Classic, L4S},
		{1, NotECT, LLLL, LLLL},      // handle:2
		{1, NotECT, L4S, L4S},        // handle:1, Not-ECT in the L-queue
		{1, ECT0, Class(7), Classic}, // no such class: Classic
		{1, ECT1, LLLL, L4S},         // the ECN mask wins over the filter
	}
	for _, tt := range tests {
		q := newTestDualPI2(t, func(c *Config) { c.ECNMask = tt.mask })
		m := pkt(tt.ecn, 100)
		m.Class = tt.filter
		v := q.Enqueue(m, 0)
		got, _ := mustDequeue(t, q, 0)
		if v.Class != tt.want || got.Class != tt.want {
			t.Errorf("mask %d %v filter %d: enqueue class %d, dequeued class %d, want %d",
				tt.mask, tt.ecn, tt.filter, v.Class, got.Class, tt.want)
		}
	}
	// Non-IP input reads as Not-ECT and goes to the C-queue.
	q := newTestDualPI2(t, nil)
	if v := q.Enqueue(MetaOf([]byte("not an IP packet"), 0), 0); v.Class != Classic {
		t.Errorf("non-IP: class %d", v.Class)
	}
}

// fill queues n packets (all at time now) and sets p'.
func fill(t *testing.T, q *DualPI2, m Meta, n int, now int64, prob uint32) {
	t.Helper()
	for range n {
		mustEnqueue(t, q, m, now)
	}
	q.prob = prob
}

// must_drop's 2-MTU rule: below 2·MTU of remaining backlog, no PI action at all.
func TestTwoMTUGuard(t *testing.T) {
	tests := []struct {
		name     string
		sizes    []int32 // queued, dequeue the first
		wantDrop bool
	}{
		{"2 packets: 1500 left", []int32{1500, 1500}, false},
		{"2999 bytes left", []int32{100, 1500, 1499}, false},
		{"3000 bytes left", []int32{100, 1500, 1500}, true},
	}
	for _, tt := range tests {
		for _, drop := range []bool{false, true} { // at dequeue and at enqueue
			q := newTestDualPI2(t, func(c *Config) { c.DropEnqueue = drop })
			q.prob = MaxProb // every roll fires
			var v Verdict
			if drop {
				// At enqueue the backlog excludes the packet: queue the
				// rest first, then the probe.
				for _, n := range tt.sizes[1:] {
					mustEnqueue(t, q, pkt(NotECT, n), 0)
				}
				v = q.Enqueue(pkt(NotECT, tt.sizes[0]), 0)
			} else {
				for _, n := range tt.sizes {
					mustEnqueue(t, q, pkt(NotECT, n), 0)
				}
				_, v = mustDequeue(t, q, 0)
			}
			if got := v.Action == Drop; got != tt.wantDrop {
				t.Errorf("%s (drop_enqueue=%v): verdict %+v, want drop %v", tt.name, drop, v, tt.wantDrop)
			}
			if tt.wantDrop && v.Reason != ReasonClassic {
				t.Errorf("%s: reason %v, want classic", tt.name, v.Reason)
			}
		}
	}
}

// The PI verdicts (must_drop, dualpi2_classic_marking and
// dualpi2_scalable_marking), overload and the Not-ECT rule included, at
// p' = 1 (every roll fires) so each row is exact.
func TestMarkingTable(t *testing.T) {
	type row struct {
		ecn      ECN
		class    Class
		overflow bool
		prob     uint32
		want     Action
		reason   Reason
	}
	half := uint32(MaxProb / 2) // k·p' = MaxProb-1: not overloaded
	tests := []row{
		{NotECT, Classic, false, half, Drop, ReasonClassic},
		{ECT0, Classic, false, half, Mark, ReasonClassic},
		{ECT0, Classic, false, MaxProb, Drop, ReasonOverload},
		{NotECT, Classic, false, MaxProb, Drop, ReasonClassic},
		{ECT1, L4S, false, half, Mark, ReasonCoupled},
		{CE, L4S, false, half, Mark, ReasonCoupled},
		{NotECT, L4S, false, half, Drop, ReasonCoupled},
		{ECT1, L4S, false, MaxProb, Drop, ReasonOverload}, // p'² = 1
		{NotECT, LLLL, false, MaxProb, Pass, ReasonNone},
		{ECT0, LLLL, false, MaxProb, Pass, ReasonNone},
		// Overflow mode: p' = 1/k is the cap, never overloaded.
		{ECT0, Classic, true, half, Mark, ReasonClassic},
		{ECT1, L4S, true, half, Mark, ReasonCoupled},
	}
	// k = 1: p' = 1 is k·p' = 1, not overload (strict >).
	tests = append(tests, row{ECT0, Classic, false, MaxProb, Mark, ReasonClassic})
	for i, tt := range tests {
		k := uint8(2)
		if i == len(tests)-1 {
			k = 1
		}
		q := newTestDualPI2(t, func(c *Config) { c.DropOverload = !tt.overflow; c.Coupling = k })
		m := pkt(tt.ecn, 1500)
		m.Class = tt.class
		fill(t, q, m, 4, 0, tt.prob)
		// The roll compares with <=: with p' = MaxProb/2 it fires half the
		// time, so force it with a source that always returns 0.
		q.rng = zeroRand()
		_, v := mustDequeue(t, q, 0)
		if v.Action != tt.want || v.Reason != tt.reason {
			t.Errorf("%v class %d overflow=%v p=%d: %v/%v, want %v/%v",
				tt.ecn, tt.class, tt.overflow, tt.prob, v.Action, v.Reason, tt.want, tt.reason)
		}
		s := q.Stats(0)
		wantMarks := uint64(0)
		if tt.want == Mark {
			wantMarks = 1
		}
		if s.ECNMark != wantMarks || s.C.Marked+s.L.Marked != wantMarks {
			t.Errorf("%v class %d: ecn_mark %d, marked %d, want %d", tt.ecn, tt.class, s.ECNMark, s.C.Marked+s.L.Marked, wantMarks)
		}
	}
}

// The PI verdicts' long-run fractions at a fixed p' (RFC 9332 §2.1:
// p'² for Classic, k·p' for L4S, drop on overload), with the backlog held
// above 2 MTU. Tolerances are 5 standard deviations.
func TestMarkDropFractions(t *testing.T) {
	const n = 20000
	tests := []struct {
		name            string
		ecn             ECN
		prob            float64
		wantMark, wantD float64
	}{
		{"classic Not-ECT: drop p'²", NotECT, 0.3, 0, 0.09},
		{"classic ECT(0): mark p'²", ECT0, 0.3, 0.09, 0},
		{"classic ECT(0) overloaded: drop p'²", ECT0, 0.6, 0, 0.36},
		{"L4S ECT(1): mark k·p'", ECT1, 0.3, 0.6, 0},
		{"L4S ECT(1) overloaded: drop p'², mark the rest", ECT1, 0.6, 0.64, 0.36},
	}
	for _, tt := range tests {
		q := newTestDualPI2(t, func(c *Config) { c.Limit = n + 10; c.MemLimit = DefaultMemLimit(c.Limit, c.MTU) })
		fill(t, q, pkt(tt.ecn, 1500), n+2, 0, uint32(tt.prob*MaxProb))
		var marks, drops int
		for range n {
			_, v := mustDequeue(t, q, 0)
			switch v.Action {
			case Mark:
				marks++
			case Drop:
				drops++
			}
		}
		check := func(what string, got int, want float64) {
			sd := math.Sqrt(want*(1-want)/n) + 1e-4
			if f := float64(got) / n; math.Abs(f-want) > 5*sd {
				t.Errorf("%s: %s fraction %.4f, want %.4f ± %.4f", tt.name, what, f, want, 5*sd)
			}
		}
		check("mark", marks, tt.wantMark)
		check("drop", drops, tt.wantD)
	}
}

// do_step_aqm: the step is strict (sojourn == step_thresh is not marked),
// counts step_marks and ecn_mark, and is not gated by the 2-MTU rule.
func TestStepStrict(t *testing.T) {
	for _, tt := range []struct {
		sojourn int64
		want    Action
	}{{1 * ms, Pass}, {1*ms + 1, Mark}, {0, Pass}} {
		q := newTestDualPI2(t, nil)
		mustEnqueue(t, q, pkt(ECT1, 1500), 5*ms)
		_, v := mustDequeue(t, q, 5*ms+tt.sojourn)
		s := q.Stats(0)
		if v.Action != tt.want {
			t.Errorf("sojourn %d: %v, want %v", tt.sojourn, v.Action, tt.want)
		}
		if tt.want == Mark && (v.Reason != ReasonStep || s.StepMarks != 1 || s.ECNMark != 1) {
			t.Errorf("sojourn %d: reason %v step_marks %d ecn_mark %d", tt.sojourn, v.Reason, s.StepMarks, s.ECNMark)
		}
	}
}

// do_step_aqm: a Not-ECT packet in the L4S class over the step is
// dropped, counted as a qdisc and an L-queue drop.
func TestStepDropsNotECT(t *testing.T) {
	q := newTestDualPI2(t, nil)
	m := pkt(NotECT, 1500)
	m.Class = L4S
	mustEnqueue(t, q, m, 0)
	_, v := mustDequeue(t, q, 2*ms)
	s := q.Stats(2 * ms)
	if v.Action != Drop || v.Reason != ReasonStep || v.Class != L4S {
		t.Fatalf("verdict %+v, want step drop in L4S", v)
	}
	if s.Dropped != 1 || s.L.Dropped != 1 || s.DropsBy[ReasonStep] != 1 || s.StepMarks != 0 {
		t.Errorf("stats %+v", s)
	}
	if _, _, ok := q.Dequeue(2 * ms); ok {
		t.Error("queue not empty after the drop")
	}
}

// dualpi2_skb_classify's priority class: LLLL is never PI- or
// step-marked or dropped; only the limit applies.
func TestLLLL(t *testing.T) {
	q := newTestDualPI2(t, func(c *Config) { c.Limit = 50 })
	m := pkt(NotECT, 1500)
	m.Class = LLLL
	fill(t, q, m, 50, 0, MaxProb)
	if v := q.Enqueue(m, 0); v.Action != Drop || v.Reason != ReasonLimit || v.Class != LLLL {
		t.Errorf("51st LLLL packet: %+v, want limit drop", v)
	}
	for range 50 {
		if _, v := mustDequeue(t, q, 100*ms); v.Action != Pass || v.Class != LLLL {
			t.Fatalf("LLLL verdict %+v", v)
		}
	}
}

// do_step_aqm with step_thresh in packets: 3p marks iff more than 3
// packets remain.
func TestStepInPackets(t *testing.T) {
	q := newTestDualPI2(t, func(c *Config) { c.StepInPackets = true; c.StepThresh = 3 })
	for range 6 {
		mustEnqueue(t, q, pkt(ECT1, 100), 0)
	}
	want := []Action{Mark, Mark, Pass, Pass, Pass, Pass} // 5, 4 left: marked; 3 left: not
	for i, w := range want {
		if _, v := mustDequeue(t, q, 10*ms); v.Action != w {
			t.Errorf("dequeue %d (%d left): %v, want %v", i, 5-i, v.Action, w)
		}
	}
}

// min_qlen_step = 2 (dualpi2_enqueue_skb) spares the first two packets.
func TestMinQlenStep(t *testing.T) {
	q := newTestDualPI2(t, func(c *Config) { c.MinQlenStep = 2 })
	for range 4 {
		mustEnqueue(t, q, pkt(ECT1, 100), 0)
	}
	want := []Action{Pass, Pass, Mark, Mark}
	for i, w := range want {
		if _, v := mustDequeue(t, q, 10*ms); v.Action != w {
			t.Errorf("packet %d: %v, want %v", i+1, v.Action, w)
		}
	}
}

// dequeue_packet's WRR credit scheduler, classic_protection 0 included.
func TestWRR(t *testing.T) {
	tests := []struct {
		protection uint8
		wantC      int // C dequeues among the first 100
		firstL     bool
	}{{10, 10, true}, {0, 0, true}, {100, 100, false}, {50, 50, true}} // credit 0 serves L
	for _, tt := range tests {
		q := newTestDualPI2(t, func(c *Config) { c.ClassicProtection = tt.protection; c.Limit = 1000 })
		for range 200 {
			mustEnqueue(t, q, pkt(ECT0, 1000), 0)
			mustEnqueue(t, q, pkt(ECT1, 1000), 0)
		}
		nC := 0
		for i := range 100 {
			m, _ := mustDequeue(t, q, 0)
			if i == 0 && (m.Class == L4S) != tt.firstL {
				t.Errorf("protection %d: first packet from %v", tt.protection, m.Class)
			}
			if m.Class == Classic {
				nC++
			}
		}
		if d := nC - tt.wantC; d < -1 || d > 1 {
			t.Errorf("protection %d: %d C packets of 100, want %d ± 1", tt.protection, nC, tt.wantC)
		}
	}
}

// Credit starts at MTU·(wc − wl), is frozen while one queue is empty and
// returns to its initial value when both are.
func TestCredit(t *testing.T) {
	q := newTestDualPI2(t, func(c *Config) { c.ClassicProtection = 0 })
	if got := q.Stats(0).Credit; got != -150_000 {
		t.Fatalf("initial credit %d, want 1500·(0−100)", got)
	}
	q = newTestDualPI2(t, nil)
	if got := q.Stats(0).Credit; got != -120_000 {
		t.Fatalf("initial credit %d, want 1500·(10−90)", got)
	}
	for range 3 {
		mustEnqueue(t, q, pkt(ECT0, 1000), 0)
	}
	mustEnqueue(t, q, pkt(ECT1, 1000), 0)
	mustDequeue(t, q, 0) // L, C waiting: +10·1000
	if got := q.Stats(0).Credit; got != -110_000 {
		t.Fatalf("credit after an L packet %d, want -110000", got)
	}
	mustDequeue(t, q, 0) // C only: frozen
	mustDequeue(t, q, 0)
	if got := q.Stats(0).Credit; got != -110_000 {
		t.Fatalf("credit with L empty %d, want frozen at -110000", got)
	}
	mustDequeue(t, q, 0)
	if _, _, ok := q.Dequeue(0); ok {
		t.Fatal("queue should be empty")
	}
	if got := q.Stats(0).Credit; got != -120_000 {
		t.Fatalf("credit after both emptied %d, want reset to -120000", got)
	}
}

// dualpi2_enqueue_skb: the packet limit and the memory limit.
func TestLimits(t *testing.T) {
	q := newTestDualPI2(t, nil)
	for i := range DefaultLimit {
		if v := q.Enqueue(pkt(ECT1, 1500), int64(i)); v.Action != Pass {
			t.Fatalf("packet %d refused: %+v", i+1, v)
		}
	}
	v := q.Enqueue(pkt(ECT1, 1500), 1)
	s := q.Stats(1)
	if v.Action != Drop || v.Reason != ReasonLimit || v.Class != L4S {
		t.Errorf("10001st packet: %+v, want limit drop in L4S", v)
	}
	if s.Overlimits != 1 || s.DropsBy[ReasonLimit] != 1 || s.L.Dropped != 1 {
		t.Errorf("overlimits %d, limit drops %d", s.Overlimits, s.DropsBy[ReasonLimit])
	}
	checkInvariants(t, q)

	q = newTestDualPI2(t, func(c *Config) { c.MemLimit = 4000 })
	mustEnqueue(t, q, pkt(ECT0, 1500), 0)
	mustEnqueue(t, q, pkt(ECT0, 1500), 0)
	if v := q.Enqueue(pkt(ECT0, 1500), 0); v.Action != Drop || v.Reason != ReasonLimit {
		t.Errorf("4500 bytes > memlimit 4000: %+v", v)
	}
	mustEnqueue(t, q, pkt(ECT0, 1000), 0) // exactly 4000: fits
	s = q.Stats(0)
	if s.MemoryUsed != 4000 || s.MaxMemoryUsed != 4000 || s.MemoryLimit != 4000 || s.Overlimits != 1 {
		t.Errorf("memory %d max %d limit %d overlimits %d", s.MemoryUsed, s.MaxMemoryUsed, s.MemoryLimit, s.Overlimits)
	}
}

// Counters, as dualpi2_dump_stats reports them.
func TestCounters(t *testing.T) {
	q := newTestDualPI2(t, nil)
	mustEnqueue(t, q, pkt(ECT0, 100), 0)
	mustEnqueue(t, q, pkt(ECT1, 200), 1*ms)
	mustEnqueue(t, q, pkt(NotECT, 300), 2*ms)
	s := q.Stats(5 * ms)
	if s.PktsInC != 2 || s.PktsInL != 1 || s.MaxQ != 2 {
		t.Errorf("pkts_in_c %d pkts_in_l %d maxq %d, want 2 1 2", s.PktsInC, s.PktsInL, s.MaxQ)
	}
	if s.DelayC != 5*ms || s.DelayL != 4*ms {
		t.Errorf("delay_c %d delay_l %d, want 5ms 4ms", s.DelayC, s.DelayL)
	}
	if s.BacklogPkts != 3 || s.BacklogBytes != 600 || s.C.Enqueued != 2 || s.L.Enqueued != 1 {
		t.Errorf("backlog %d/%d", s.BacklogPkts, s.BacklogBytes)
	}
	for range 3 {
		mustDequeue(t, q, 5*ms)
	}
	s = q.Stats(6 * ms)
	if s.DelayC != 0 || s.DelayL != 0 || s.SentPackets != 3 || s.SentBytes != 600 || s.MaxQ != 2 {
		t.Errorf("after draining: %+v", s)
	}
	if s.StepMarks != 1 || s.L.Marked != 1 { // the L packet waited 4 ms
		t.Errorf("step_marks %d", s.StepMarks)
	}
}

// drop_enqueue: PI drops happen at enqueue (backlog without the packet)
// and a mark decided there is reported when the packet leaves.
func TestDropEnqueue(t *testing.T) {
	q := newTestDualPI2(t, func(c *Config) { c.DropEnqueue = true })
	fill(t, q, pkt(ECT1, 1500), 2, 0, 0) // 3000 bytes: the guard is open
	q.prob = MaxProb / 2                 // k·p' < 1: not overloaded
	q.rng = zeroRand()                   // every roll fires
	if v := q.Enqueue(pkt(NotECT, 1500), 0); v.Action != Drop || v.Reason != ReasonClassic || v.Class != Classic {
		t.Errorf("Not-ECT: %+v, want classic drop at enqueue", v)
	}
	mustEnqueue(t, q, pkt(ECT0, 1500), 0)
	q.prob = 0 // no PI action at dequeue with drop_enqueue anyway
	var got []Verdict
	for range 3 {
		_, v := mustDequeue(t, q, 0)
		got = append(got, v)
	}
	// WRR: L, L, then C (credit still negative, but L is empty).
	if got[0].Action != Pass || got[1].Action != Pass || got[2].Action != Mark || got[2].Reason != ReasonClassic {
		t.Errorf("verdicts %+v: want the ECT(0) packet marked (classic) at dequeue", got)
	}
	if s := q.Stats(0); s.ECNMark != 1 || s.C.Marked != 1 || s.DropsBy[ReasonClassic] != 1 {
		t.Errorf("ecn_mark %d, C marked %d, classic drops %d", s.ECNMark, s.C.Marked, s.DropsBy[ReasonClassic])
	}
}

// zeroSource makes every roll fire: rng.Uint32() is 0 <= any p.
type zeroSource struct{}

func (zeroSource) Uint64() uint64 { return 0 }

func zeroRand() *rand.Rand { return rand.New(zeroSource{}) }
