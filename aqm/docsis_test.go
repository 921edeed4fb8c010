package aqm

import (
	"math/rand/v2"
	"testing"
)

func newTestDOCSIS(t testing.TB, mod func(*DOCSISConfig)) *DOCSIS {
	t.Helper()
	return newTestQueue(t, DefaultDOCSISConfig(), mod, func(c DOCSISConfig) (*DOCSIS, error) { return NewDOCSIS(c, rand.New(rand.NewPCG(7, 0x5eed))) })
}

// The L-queue ramp with the defaults: MAXTH 1 ms, range 2^19 = 524288 ns,
// so MINTH = 1000000 − 524288 = 475712 ns; halfway (737856 ns) the
// probability is 262144·(2^32−1)/524288 = 2147483647. A floor above
// MAXTH − range moves the whole ramp up (DOCSIS's FLOOR for slow links:
// 2·8·2000 B at 10 Mb/s = 3.2 ms).
func TestDOCSISRamp(t *testing.T) {
	q := newTestDOCSIS(t, nil)
	for _, tc := range []struct {
		d    int64
		want uint32
	}{
		{0, 0}, {475712, 0}, {475713, 8191}, {737856, 2147483647}, {1000000, MaxProb}, {5 * ms, MaxProb},
	} {
		if got := q.probNative(tc.d); got != tc.want {
			t.Errorf("ramp(%d ns) = %d, want %d", tc.d, got, tc.want)
		}
	}
	if f := DOCSISFloor(10_000_000); f != 3_200_000 {
		t.Fatalf("floor at 10 Mb/s %d, want 3200000", f)
	}
	q = newTestDOCSIS(t, func(c *DOCSISConfig) { c.Floor = DOCSISFloor(10_000_000) })
	if q.minTh != 3_200_000 || q.width != 524288 {
		t.Errorf("with floor: MINTH %d width %d, want 3200000 524288", q.minTh, q.width)
	}
}

// RFC 9957's scoring in its integer units: a packet adds
// probNative·size/AGING to its flow's score, AGING = 2^(19−30) B/ns, i.e.
// prob·size·2048 ns at probability 1: a 1500-byte packet fully marked
// scores (2^32−1)·1500 >> 21 = 3071999 ns; 1000 bytes at probability ½,
// 2147483647·1000 >> 21 = 1023999 ns. The score drains 1 ns per ns.
// A packet is sanctioned when qdelay > CRITICALqL (1 ms) and
// qdelay·score > CRITICALqLSCORE·CRITICALqL (4 ms · 1 ms):
//
//	qdelay 2 ms, first 1500-B packet: 2 ms·3.072 ms = 6.14 ms² > 4 ms²: sanctioned;
//	qdelay 1.2 ms: first packet 1.2·3.072 = 3.69 < 4: not; the second at
//	the same time scores 6.144 ms, 7.37 > 4: sanctioned;
//	qdelay 1 ms: never (not above CRITICALqL), whatever the score.
func TestQProtScoring(t *testing.T) {
	qpc := DefaultQProtConfig()
	qpc.CriticalQL = ms // as DOCSIS sets it from MAXTH
	p := newQProt(qpc)
	if got := p.cfg.congestionScore(MaxProb, 1500); got != 3071999 {
		t.Errorf("score(1, 1500 B) = %d, want 3071999", got)
	}
	if got := p.cfg.congestionScore(MaxProb/2, 1000); got != 1023999 {
		t.Errorf("score(1/2, 1000 B) = %d, want 1023999", got)
	}
	for _, tc := range []struct {
		name   string
		qdelay int64
		want   []bool
	}{
		{"2 ms", 2 * ms, []bool{true}},
		{"1.2 ms", 1200_000, []bool{false, true}},
		{"1 ms", ms, []bool{false, false, false, false}},
	} {
		p := newQProt(qpc)
		m := Meta{Flow: 0xabcdef, Len: 1500, ECN: ECT1}
		for i, want := range tc.want {
			if got := p.protect(&m, tc.qdelay, MaxProb, 10*ms); got != want {
				t.Errorf("%s: packet %d sanctioned %v, want %v", tc.name, i+1, got, want)
			}
		}
	}
	// The score ages: 3071999 ns after one fully marked packet, a fresh
	// packet at probability 0 finds the bucket drained (score 0).
	p = newQProt(DefaultQProtConfig())
	m := Meta{Flow: 42, Len: 1500}
	h := p.pickBucket(m.Flow, 0)
	if s := p.fillBucket(h, MaxProb, 1500, 0); s != 3071999 {
		t.Fatalf("score %d", s)
	}
	h = p.pickBucket(m.Flow, 3071999)
	if s := p.fillBucket(h, 0, 1500, 3071999); s != 0 {
		t.Errorf("score after draining %d, want 0", s)
	}
}

// Buckets: a flow keeps its bucket; a second flow whose hash slices both
// land on occupied, unexpired buckets shares the default bucket.
func TestQProtBuckets(t *testing.T) {
	p := newQProt(DefaultQProtConfig())
	a, b, c := uint32(0x21), uint32(0x41), uint32(0x441) // 5-bit slices (1,1) (1,2) (1,2)
	ha := p.pickBucket(a, 0)
	p.fillBucket(ha, MaxProb, 1500, 0)
	if ha != 1 {
		t.Fatalf("flow a in bucket %d, want 1", ha)
	}
	hb := p.pickBucket(b, 0)
	p.fillBucket(hb, MaxProb, 1500, 0)
	if hb != 2 {
		t.Fatalf("flow b in bucket %d, want 2 (its second slice)", hb)
	}
	hc := p.pickBucket(c, 0)
	if hc != 32 {
		t.Errorf("flow c in bucket %d, want the default bucket 32 (buckets 1 and 2 are taken)", hc)
	}
	if p.pickBucket(a, 1000) != ha {
		t.Error("flow a lost its bucket")
	}
}

// A non-responsive ECT(1) flow at 1.5× a 20 Mb/s link and a Prague-like
// flow (ECT(1), rate cut by half the EWMA of its mark fraction each 20 ms
// round, else one packet per round more) share the docsis queue, Rate set
// to the link's: FLOOR = 2·8·2000 B/20 Mb/s = 1.6 ms, so the ramp runs
// 1.6..2.124 ms and CRITICALqL = 2.124 ms. Queue Protection sanctions the
// non-responsive flow — one flow, many of its packets — and never the
// Prague-like one, and keeps the L-queue's sojourn under 2·CRITICALqL;
// without it the same traffic drives the L-queue delay past 50 ms.
func TestDOCSISQueueProtection(t *testing.T) {
	on := runQProt(t, true)
	if on.goodSanctioned != 0 {
		t.Errorf("Prague-like flow: %d packets sanctioned, want none", on.goodSanctioned)
	}
	if on.st.QProt.SanctionedFlows != 1 || on.st.QProt.SanctionedPackets < on.badArrived/5 {
		t.Errorf("qprot %+v: want 1 flow and at least a fifth of the %d non-responsive packets", on.st.QProt, on.badArrived)
	}
	if on.lDelayMax >= 2*2_124_288 {
		t.Errorf("L-queue sojourn up to %d ns, want < 2·CRITICALqL", on.lDelayMax)
	}
	off := runQProt(t, false)
	if off.lDelayMax < 50*ms || off.st.QProt.SanctionedPackets != 0 {
		t.Errorf("without queue protection: L sojourn up to %d ns, %d sanctions; want > 50 ms, 0", off.lDelayMax, off.st.QProt.SanctionedPackets)
	}
}

type qprotRun struct {
	goodSanctioned, goodSent, badArrived uint64
	lDelayMax                            int64
	st                                   Stats
}

func runQProt(t *testing.T, on bool) qprotRun {
	q := newTestDOCSIS(t, func(c *DOCSISConfig) { c.Rate, c.QProt.On = 20_000_000, on })
	var acc accounting
	var r qprotRun
	const rate = 20_000_000
	const badFlow, goodFlow = 0x1111_1111, 0x2222_2223
	const rtt = 20 * ms
	goodRate := 2e6 // bits/s
	var alpha float64
	var roundMarks, roundPkts int
	nextBad, nextGood, nextRound := int64(0), int64(0), rtt
	simLink(t, q, &acc, rate, 3000*ms, func(now int64) {
		for nextBad <= now {
			acc.enqueue(t, q, flowPkt(badFlow, ECT1, 1500), nextBad)
			r.badArrived++
			nextBad += 1500 * 8 * 1e9 / (rate * 3 / 2)
		}
		for nextGood <= now {
			acc.enqueue(t, q, flowPkt(goodFlow, ECT1, 1000), nextGood)
			nextGood += int64(1000 * 8 * 1e9 / goodRate)
		}
		if now >= nextRound {
			f := 0.0
			if roundPkts > 0 {
				f = float64(roundMarks) / float64(roundPkts)
			}
			alpha += (f - alpha) / 16
			if roundMarks > 0 {
				goodRate *= 1 - alpha/2
			} else {
				goodRate += 1000 * 8 * 1e9 / float64(rtt)
			}
			goodRate = max(goodRate, 100e3)
			roundMarks, roundPkts = 0, 0
			nextRound += rtt
		}
	}, func(m Meta, v Verdict, now int64) {
		inL := v.Class != Classic
		if inL {
			r.lDelayMax = max(r.lDelayMax, now-m.Arrival)
		}
		if m.Flow == goodFlow {
			r.goodSent++
			roundPkts++
			if v.Action == Mark {
				roundMarks++
			}
			if !inL {
				r.goodSanctioned++
			}
		}
	})
	r.st = q.Stats(3000 * ms)
	t.Logf("qprot %v: good %d sent, %d sanctioned, final rate %.2f Mb/s; L sojourn max %d µs; %d non-responsive packets; %+v",
		on, r.goodSent, r.goodSanctioned, goodRate/1e6, r.lDelayMax/1000, r.badArrived, r.st.QProt)
	return r
}

// NQB (RFC 9956): with the option, DSCP 45 packets go to the L-queue
// whatever their ECN codepoint, in DualPI2 and docsis; without it they
// are Classic unless ECT(1)/CE.
func TestNQBClassification(t *testing.T) {
	nqb := func(e ECN) Meta { return Meta{ECN: e, DSCP: DSCPNQB, Len: 100} }
	for _, tc := range []struct {
		name string
		q    Queue
		m    Meta
		want Class
	}{
		{"dualpi2 nqb Not-ECT", newTestDualPI2(t, func(c *Config) { c.NQB = true }), nqb(NotECT), L4S},
		{"dualpi2 nqb ECT(0)", newTestDualPI2(t, func(c *Config) { c.NQB = true }), nqb(ECT0), L4S},
		{"dualpi2 no nqb", newTestDualPI2(t, nil), nqb(NotECT), Classic},
		{"dualpi2 nqb other DSCP", newTestDualPI2(t, func(c *Config) { c.NQB = true }), Meta{DSCP: 46, Len: 100}, Classic},
		{"docsis nqb Not-ECT", newTestDOCSIS(t, func(c *DOCSISConfig) { c.NQB = true }), nqb(NotECT), LLLL},
		{"docsis nqb ECT(0)", newTestDOCSIS(t, func(c *DOCSISConfig) { c.NQB = true }), nqb(ECT0), LLLL},
		{"docsis no nqb", newTestDOCSIS(t, nil), nqb(NotECT), Classic},
		{"docsis ECT(1)", newTestDOCSIS(t, nil), Meta{ECN: ECT1, Len: 100}, LLLL},
	} {
		v := mustEnqueue(t, tc.q, tc.m, 0)
		if v.Class != tc.want {
			t.Errorf("%s: class %v (%d), want %d", tc.name, v.Class, v.Class, tc.want)
		}
		if _, dv := mustDequeue(t, tc.q, 0); dv.Class != tc.want {
			t.Errorf("%s: dequeued from class %d, want %d", tc.name, dv.Class, tc.want)
		}
	}
}

// A sanctioned packet leaves the C-queue with the reason "sanction" when
// the Classic AQM leaves it alone.
func TestDOCSISSanctionReason(t *testing.T) {
	q := newTestDOCSIS(t, nil)
	// An L-queue head 2 ms old: the ramp is at 1, the first packet of a
	// new flow scores 3.07 ms and is sanctioned (see TestQProtScoring).
	mustEnqueue(t, q, Meta{ECN: ECT1, Len: 100, Flow: 1}, 0)
	v := mustEnqueue(t, q, Meta{ECN: ECT1, Len: 1500, Flow: 2}, 2*ms)
	if v.Class != Classic {
		t.Fatalf("verdict %+v, want sanctioned into the C-queue", v)
	}
	var reasons []Reason
	for range 2 {
		_, dv := mustDequeue(t, q, 2*ms)
		reasons = append(reasons, dv.Reason)
	}
	if reasons[1] != ReasonSanction {
		t.Errorf("reasons %v, want the second (C-queue) packet to say sanction", reasons)
	}
	if s := q.Stats(2 * ms); s.QProt.SanctionedPackets != 1 || s.QProt.SanctionedFlows != 1 || s.Kind != KindDOCSIS {
		t.Errorf("stats %+v kind %q", s.QProt, s.Kind)
	}
}

// A video frame as one burst: five 1200-byte ECT(1) packets at once into
// docsis at 10 Mbit/s. FLOOR = 2·8·2000 B / 10 Mbit/s = 3.2 ms, so the
// ramp runs 3.2..3.724288 ms and CRITICALqL = 3.724288 ms. Packet k meets
// qdelay = k·1200·8/10 Mbit/s = 0.96·k ms (the L backlog with itself):
// 1..3 are below MINTH (probNative 0, score 0); 4 (3.84 ms) has p = 1 and
// scores (2^32−1)·1200 >> 21 = 2457599 ns, but 3.84 ms · 2.458 ms = 9.4 ms²
// is below 4 ms · 3.724 ms = 14.9 ms²; 5 (4.8 ms) brings the score to
// 4915198 ns and 4.8 · 4.915 = 23.6 ms²: sanctioned. The score drains
// before the next frame 33 ms later, so every frame loses its last packet
// to the C-queue, and each counts as a sanction episode.
func TestDOCSISBurstTailSanctioned(t *testing.T) {
	q := newTestDOCSIS(t, func(c *DOCSISConfig) { c.Rate = 10_000_000 })
	for f := range int64(10) {
		now := f * 33 * ms
		for k := 1; k <= 5; k++ {
			v := mustEnqueue(t, q, Meta{ECN: ECT1, Len: 1200, Flow: 9}, now)
			if want := map[bool]Class{true: Classic, false: LLLL}[k == 5]; v.Class != want {
				t.Fatalf("frame %d packet %d: class %d, want %d", f, k, v.Class, want)
			}
		}
		for range 5 {
			mustDequeue(t, q, now+5*ms)
		}
	}
	if s := q.Stats(0); s.QProt.SanctionedPackets != 10 || s.QProt.SanctionedFlows != 10 {
		t.Errorf("qprot %+v, want 10 sanctioned packets in 10 episodes", s.QProt)
	}
}

// TestQProtScorer: the passive scorer under the DOCSIS defaults (no rate,
// so no FLOOR): MINTH = 1 ms − 2^19 ns = 475 712 ns, the ramp 524 288 ns
// wide, CRITICALqL = MAXTH = 1 ms, CRITICALqLSCORE 4 ms. Scores as in
// TestQProtScoring: a fully marked 1500-B packet adds 3 071 999 ns, half
// marked 1000 B (qdelay at the ramp's middle, 737 856 ns) 1 023 999 ns;
// the score drains 1 ns per ns and a drained bucket restarts at now.
func TestQProtScorer(t *testing.T) {
	s := NewQProtScorer(DefaultDOCSISConfig())
	if ql, sc := s.Thresholds(); ql != ms || sc != 4*ms {
		t.Fatalf("thresholds %d, %d; want %d, %d", ql, sc, ms, 4*ms)
	}
	var exp int64
	for i, c := range []struct {
		qdelay   int64
		size     int
		now      int64
		score    int64
		sanction bool
	}{
		{1_200_000, 1500, 0, 3_071_999, false},     // 1.2·3.07 < 4 ms²
		{1_200_000, 1500, 0, 6_143_998, true},      // 1.2·6.14 > 4
		{400_000, 1500, ms, 5_143_998, false},      // below MINTH: adds 0, drained 1 ms
		{737_856, 1000, ms, 6_167_997, false},      // not above CRITICALqL
		{1_000_001, 1500, 3 * ms, 7_239_996, true}, // 1.000001·7.24 > 4
		{400_000, 100, 20 * ms, 0, false},          // drained: restarts at now
		{2 * ms, 1500, 20 * ms, 3_071_999, true},   // 2·3.07 > 4
	} {
		score, sanction := s.Score(&exp, c.qdelay, c.size, c.now)
		if score != c.score || sanction != c.sanction {
			t.Errorf("packet %d: score %d sanction %v, want %d %v", i, score, sanction, c.score, c.sanction)
		}
	}
}

// Below MINTH a packet scores nothing and is not sanctioned, so skipping
// Score for it (as MinTh allows) changes no later score: the same packets
// scored with and without those at or below MINTH give the same scores.
func TestQProtScorerMinTh(t *testing.T) {
	s := NewQProtScorer(DefaultDOCSISConfig())
	if s.MinTh() != ms-1<<19 {
		t.Fatalf("MinTh %d, want %d", s.MinTh(), ms-1<<19)
	}
	var all, some int64
	for i, q := range []int64{2 * ms, s.MinTh(), 1_500_000, 100, 700_000, s.MinTh() - 1, 3 * ms} {
		now := int64(i) * 300_000
		before := max(all-now, 0)
		a, sa := s.Score(&all, q, 1500, now)
		if q <= s.MinTh() {
			if sa || a != before {
				t.Errorf("packet %d at %d ns: score %d (was %d) sanction %v; want it unchanged and no sanction below MINTH", i, q, a, before, sa)
			}
			continue
		}
		b, sb := s.Score(&some, q, 1500, now)
		if a != b || sa != sb {
			t.Errorf("packet %d: %d %v with every packet scored, %d %v without those below MINTH", i, a, sa, b, sb)
		}
	}
}

// The scorer's ramp takes a shift where the ramp's width is a power of
// two: the same probability as rampProb's division at every delay on and
// around the ramp.
func TestQProtScorerRampShift(t *testing.T) {
	s := NewQProtScorer(DefaultDOCSISConfig())
	if s.lgWidth != 19 {
		t.Fatalf("lgWidth %d, want 19 (a ramp 2^19 ns wide)", s.lgWidth)
	}
	div := s
	div.lgWidth = -1
	for _, d := range []int64{-1, 0, 1, 2, 3, 1000, 262_143, 262_144, 333_333, 524_286, 524_287, 524_288, 524_289, 10 * ms} {
		var e1, e2 int64
		a, sa := s.Score(&e1, s.MinTh()+d, 1499, 5*ms)
		b, sb := div.Score(&e2, s.MinTh()+d, 1499, 5*ms)
		if a != b || sa != sb {
			t.Errorf("MINTH%+d ns: score %d %v by shift, %d %v by division", d, a, sa, b, sb)
		}
	}
}
