package aqm

import (
	"math"
	"math/rand/v2"
	"testing"
)

// newTestDOCSISPIE is DOCSIS-PIE with the defaults: target 10 ms,
// interval 16 ms, A = 0.25 Hz (64/256), B = 2.5 Hz (640/256).
func newTestDOCSISPIE() *docsisPIE {
	return &docsisPIE{cfg: DefaultDOCSISPIEConfig(), target: 10 * ms, interval: 16 * ms}
}

// One update worked by hand from RFC 8034's pseudo-code in 2^-32 units
// (1 ≙ 4294967296). The increment is A·(qdelay − target) + B·(qdelay −
// qdelay_old) in Hz·256·ns, times 2^24/1e9 (2^32/256/1e9), auto-scaled
// by drop_prob_, truncated toward zero:
//
//	fresh: 64·10e6 + 640·20e6 = 1.344e10; p < 1e-6 so /2048:
//	  1.344e10·2^13/1e9 = 110100.48 → 110100 (0.0525/2048 = 2.56e-5)
//	p 0.05 (214748364), 10 → 12 ms: 64·2e6 + 640·2e6 = 1.408e9; p < 0.1 so /2:
//	  1.408e9·2^23/1e9 = 11811160.06 → 214748364 + 11811160 = 226559524
//	p 0.2 (858993459), 10 → 30 ms: 1.408e10, ×2: 472446402 > 0.02, so
//	  0.02 (85899345): 944892804
//	p 42949672 (just under 0.01: 42949672·100 < 2^32), 3 → 2 ms:
//	  64·(−8e6) + 640·(−1e6) = −1.152e9, /8: −2415919.1 → −2415919;
//	  both delays < 5 ms, ×0.98: (42949672 − 2415919)·49/50 = 39723077
//	p 0.5, 250 → 250 ms: 64·240e6 = 1.536e10, ×2, capped at 0.02; then
//	  > 200 ms adds 0.02: 2147483648 + 2·85899345 = 2319282338
//	empty and at rest: 64·(−10e6)/2048 → −5242, ×0.98, clamped: 0
//	at 13.6 (58411555225), 300 ms: + 0.02 + 0.02, clamped: 58411555225
//	burst allowance 100 ms left: p forced to 0, allowance 84 ms
func TestDOCSISPIEUpdateByHand(t *testing.T) {
	const one = int64(1) << 32
	for _, tc := range []struct {
		name                  string
		prob, old, qdelay, ba int64
		want, wantBA          int64
	}{
		{"fresh", 0, 0, 20 * ms, 0, 110100, 0},
		{"below 10%", one / 20, 10 * ms, 12 * ms, 0, 226559524, 0},
		{"capped step", one / 5, 10 * ms, 30 * ms, 0, 944892804, 0},
		{"decay", 42949672, 3 * ms, 2 * ms, 0, 39723077, 0},
		{"high delay", one / 2, 250 * ms, 250 * ms, 0, 2319282338, 0},
		{"at rest", 0, 0, 0, 0, 0, 0},
		{"ceiling", 58411555225, 300 * ms, 300 * ms, 0, 58411555225, 0},
		{"burst allowance", one * 3 / 10, 20 * ms, 20 * ms, 100 * ms, 0, 84 * ms},
	} {
		d := newTestDOCSISPIE()
		d.dropProb, d.qdelay, d.allowance, d.state = tc.prob, tc.old, tc.ba, inBurst
		d.update(tc.qdelay)
		if d.dropProb != tc.want || d.allowance != tc.wantBA || d.qdelay != tc.qdelay {
			t.Errorf("%s: drop_prob %d allowance %d qdelay_old %d, want %d %d %d",
				tc.name, d.dropProb, d.allowance, d.qdelay, tc.want, tc.wantBA, tc.qdelay)
		}
	}
	if dpMaxProb != 58411555225 || dpProbLow != 3650722201 || dpProbHigh != 36507222016 || dpStep != 85899345 {
		t.Errorf("constants %d %d %d %d", dpMaxProb, dpProbLow, dpProbHigh, dpStep)
	}
}

// drop_early by hand, with drop_prob_ 0.5 (2147483648) and 1500-byte
// packets: p = 2147483648·1500/1024 = 3145728000 (0.73); the first packet
// leaves accu_prob_ at 0.73 < PROB_LOW (0.85), no drop; the second brings
// it to 1.46, so the roll decides, against p; a drop resets it to 0 and
// arms the burst allowance (142 ms) if it is the burst's first. A 64-byte
// packet at drop_prob_ 13.6 gets min(13.6·64/1024, 0.85) = PROB_LOW.
func TestDOCSISPIEDropEarlyByHand(t *testing.T) {
	const one = int64(1) << 32
	var rolled []uint32
	yes := func(p uint32) bool { rolled = append(rolled, p); return true }

	d := newTestDOCSISPIE()
	d.dropProb, d.qdelay = one/2, 10*ms
	if d.dropEarly(1500, 100_000, true, yes) || d.state != noBurst {
		t.Fatal("no burst yet and the queue under a third of its buffer: no drop, state none")
	}
	if d.dropEarly(1500, 100_000, false, yes) || d.accuProb != 3145728000 || d.state != inBurst {
		t.Fatalf("first packet: accu %d state %v, want 3145728000 burst and no drop", d.accuProb, d.state)
	}
	if !d.dropEarly(1500, 100_000, false, yes) || len(rolled) != 1 || rolled[0] != 3145728000 {
		t.Fatalf("second packet: rolls %v, want one against 3145728000 and a drop", rolled)
	}
	if d.accuProb != 0 || d.state != inBurstProtecting || d.allowance != 142*ms {
		t.Fatalf("after the drop: accu %d state %v allowance %d", d.accuProb, d.state, d.allowance)
	}
	if d.dropEarly(1500, 100_000, false, yes) {
		t.Fatal("a drop inside the burst allowance")
	}

	for _, tc := range []struct {
		name         string
		prob, qdelay int64
		size, qbytes int
		accu         int64
		drop         bool
		wantAccu     int64
		wantRoll     int64 // the probability rolled against; −1: none
	}{
		// qdelay_old 4 ms < 5 ms and drop_prob_ 0.1 < 0.2: light load;
		// 429496729·1500/1024 = 629145599.
		{"light load", one / 10, 4 * ms, 1500, 100_000, 0, false, 629145599, -1},
		{"two mean packets", one / 2, 10 * ms, 1500, 2048, 0, false, 3145728000, -1},
		{"PROB_HIGH reached", one / 2, 10 * ms, 1500, 100_000, dpProbHigh - 1, true, 0, -1},
		// 58411555225·64/1024 = 3650722201 = PROB_LOW: the roll decides.
		{"small packet at the ceiling", dpMaxProb, 10 * ms, 64, 100_000, 0, false, dpProbLow, dpProbLow},
	} {
		d := newTestDOCSISPIE()
		d.dropProb, d.qdelay, d.accuProb, d.state = tc.prob, tc.qdelay, tc.accu, inBurst
		rolled := int64(-1)
		no := func(p uint32) bool { rolled = int64(p); return false }
		if got := d.dropEarly(tc.size, tc.qbytes, false, no); got != tc.drop || d.accuProb != tc.wantAccu || rolled != tc.wantRoll {
			t.Errorf("%s: drop %v accu %d roll %d, want %v %d %d", tc.name, got, d.accuProb, rolled, tc.drop, tc.wantAccu, tc.wantRoll)
		}
	}
}

// The burst state steps back after quiet updates: protecting → burst at
// the first quiet one once the allowance is spent (142 ms: 9 updates of
// 16 ms), burst → none when the quiet time exceeds 1 s (63 updates:
// 63·16 = 1008 ms).
func TestDOCSISPIEBurstStates(t *testing.T) {
	d := newTestDOCSISPIE()
	d.state, d.allowance = inBurstProtecting, 142*ms
	n := 0
	for d.state == inBurstProtecting && n < 100 {
		d.update(0)
		n++
	}
	if n != 9 || d.state != inBurst {
		t.Fatalf("protecting left after %d updates (state %v), want 9", n, d.state)
	}
	n = 0
	for d.state == inBurst && n < 100 {
		d.update(0)
		n++
	}
	if n != 63 || !d.idle() {
		t.Fatalf("burst left after %d quiet updates (idle %v), want 63", n, d.idle())
	}
}

// p' = √p_C in MaxProb units: p_C = 0.04 (171798691, just under) gives
// ⌊√(171798691·2^32)⌋ = 858993457 (0.2); from 1 up, MaxProb.
func TestDOCSISPIEBaseProb(t *testing.T) {
	for _, tc := range []struct {
		p    int64
		want uint32
	}{
		{0, 0}, {1, 65536}, {171798691, 858993457}, {1 << 30, 1 << 31}, {1 << 32, MaxProb}, {dpMaxProb, MaxProb},
	} {
		d := &docsisPIE{dropProb: tc.p}
		if got := d.baseProb(); got != tc.want {
			t.Errorf("baseProb(%d) = %d, want %d", tc.p, got, tc.want)
		}
	}
	for _, x := range []uint64{0, 1, 2, 3, 4, 15, 16, 17, 1<<62 - 1, 1 << 62, math.MaxUint64} {
		r := isqrt(x)
		if r*r > x || (r+1) <= math.MaxUint32 && (r+1)*(r+1) <= x {
			t.Errorf("isqrt(%d) = %d", x, r)
		}
	}
}

// p_L = max(ramp, min(k·√p_C, 1)) with k = 2: p_C 0.04 couples at
// 2·858993457 = 1717986914 (0.4); p_C 0.25 and above saturate at 1; the
// ramp wins where it is higher (halfway up: 2147483647, 0.5).
func TestDOCSISLProb(t *testing.T) {
	q := newTestDOCSIS(t, nil)
	for _, tc := range []struct {
		pC   int64
		pn   uint32
		want uint32
		why  Reason
	}{
		{0, 0, 0, ReasonRamp},
		{171798691, 0, 1717986914, ReasonCoupled},
		{171798691, 2147483647, 2147483647, ReasonRamp},
		{1 << 30, 0, MaxProb, ReasonCoupled},
		{dpMaxProb, MaxProb, MaxProb, ReasonCoupled}, // 2·p' > the ramp's 1: coupled
	} {
		q.pie.dropProb = tc.pC
		q.pi.prob = q.pie.baseProb()
		if got, why := q.lProb(tc.pn); got != tc.want || why != tc.why {
			t.Errorf("p_C %d ramp %d: p_L %d (%v), want %d (%v)", tc.pC, tc.pn, got, why, tc.want, tc.why)
		}
	}
}

// End to end, the L-queue's marks follow min(2·√p_C, 1): with p_C held at
// 0.04 and the L-queue kept short (ramp 0), 20000 ECT(1) packets are
// marked with probability 0.4 (σ = √(0.4·0.6/20000) = 0.0035; 5σ bound).
func TestDOCSISCoupledLMarks(t *testing.T) {
	q := newTestDOCSIS(t, func(c *DOCSISConfig) { c.Rate = 1_000_000_000; c.QProt.On = false })
	q.pie.dropProb = 171798691
	q.pi.prob = q.pie.baseProb()
	const n = 20000
	marked := 0
	for i := range int64(n) {
		now := i * 1000
		if v := q.Enqueue(Meta{Len: 1500, ECN: ECT1}, now); v.Action != Pass {
			t.Fatalf("enqueue %d: %+v", i, v)
		}
		_, v, ok := q.Dequeue(now)
		if !ok {
			t.Fatal("nothing to dequeue")
		}
		if v.Action == Mark {
			if v.Reason != ReasonCoupled {
				t.Fatalf("mark reason %v, want coupled", v.Reason)
			}
			marked++
		}
	}
	if f := float64(marked) / n; math.Abs(f-0.4) > 5*0.0035 {
		t.Errorf("L marks %.4f, want 0.4 ± 0.0175", f)
	}
}

// Constant overload in virtual time: 1024-byte Not-ECT Classic packets
// arrive evenly at 1.25× a 10 Mbit/s link, so in steady state 1 in 5 must
// go. RFC 8034's controller holds qdelay at target and settles drop_prob_
// where drop_early drops 1 in 5: with p = drop_prob_ per 1024-byte packet
// and PROB_LOW 0.85, the first drop after a reset comes at the third
// packet at the soonest when p ≥ 0.85/3, and then each packet is dropped
// with probability p, so a cycle is 2 + 1/p packets; 5 packets gives p =
// 1/3. The test averages drop_prob_ over the last 30 s of 60.
func TestDOCSISPIESettles(t *testing.T) {
	const rate = 10_000_000
	q := newTestDOCSIS(t, func(c *DOCSISConfig) { c.Rate = rate; c.DualPI2.Limit = 100_000; c.DualPI2.MemLimit = 1 << 30 })
	const size = 1024
	serve := int64(size * 8 * 1_000_000_000 / rate) // 819.2 µs → 819200 ns
	gap := serve * 4 / 5                            // 1.25× the link rate
	var (
		nextArrival, linkFree int64
		sum, sumDelay         float64
		samples               int
		lastUpdate            = q.NextUpdate()
	)
	const end, from = 60_000 * ms, 30_000 * ms
	for now := int64(0); now < end; {
		now = min(nextArrival, linkFree)
		q.Advance(now)
		if q.NextUpdate() != lastUpdate {
			lastUpdate = q.NextUpdate()
			if now >= from {
				st := q.Stats(now).DOCSISClassic
				sum += float64(st.ProbC) / DOCSISProbOne
				sumDelay += float64(st.QDelay)
				samples++
			}
		}
		if now == nextArrival {
			q.Enqueue(Meta{Len: size, ECN: NotECT}, now)
			nextArrival += gap
		}
		if now == linkFree {
			linkFree = now + 1000
			for {
				m, v, ok := q.Dequeue(now)
				if !ok {
					break
				}
				if v.Action != Drop {
					linkFree = now + int64(m.Len)*8*1_000_000_000/rate
					break
				}
			}
		}
	}
	mean, delay := sum/float64(samples), sumDelay/float64(samples)/float64(ms)
	t.Logf("drop_prob_ %.4f over %d updates, qdelay %.2f ms", mean, samples, delay)
	if math.Abs(mean-1.0/3) > 0.04 {
		t.Errorf("drop_prob_ settled at %.4f, want 1/3 ± 0.04", mean)
	}
	if math.Abs(delay-10) > 2 {
		t.Errorf("qdelay estimate %.2f ms, want the 10 ms target ± 2", delay)
	}
}

// --docsis-classic pi2 keeps the coupled core's PI2: no DOCSIS-PIE state
// moves, and p_C is p'².
func TestDOCSISClassicPI2(t *testing.T) {
	q := newTestDOCSIS(t, func(c *DOCSISConfig) { c.Classic = DOCSISClassicPI2; c.Rate = 10_000_000 })
	for i := range int64(2000) {
		q.Enqueue(Meta{Len: 1500, ECN: NotECT}, i*ms/2)
		q.Advance(i * ms / 2)
	}
	st := q.Stats(1000 * ms)
	if q.pie.dropProb != 0 || st.DOCSISClassic.AQM != DOCSISClassicPI2 || q.pi.prob == 0 {
		t.Fatalf("pi2: DOCSIS-PIE p %d, stats %+v, p' %d", q.pie.dropProb, st.DOCSISClassic, q.pi.prob)
	}
	if want := uint64(q.pi.prob) * uint64(q.pi.prob) >> 32; st.DOCSISClassic.ProbC != want {
		t.Errorf("p_C %d, want p'² %d", st.DOCSISClassic.ProbC, want)
	}
	if err := (DOCSISConfig{}).Validate(); err == nil {
		t.Error("a config without a Classic AQM validated")
	}
}

// A Classic packet drop_early picks is dropped if Not-ECT, CE-marked if
// ECN-capable while drop_prob_ ≤ 10 %, and dropped as overload above.
func TestDOCSISPIEClassicVerdicts(t *testing.T) {
	const one = int64(1) << 32
	for _, tc := range []struct {
		ecn  ECN
		prob int64
		act  Action
		why  Reason
	}{
		{NotECT, one / 20, Drop, ReasonClassic},
		{ECT0, one / 10, Pass, ReasonNone}, // marked, reported at dequeue
		{ECT0, one/10 + 1, Drop, ReasonOverload},
	} {
		q := newTestDOCSIS(t, func(c *DOCSISConfig) { c.Rate = 10_000_000 })
		for range 3 {
			q.pi.enqueueAs(Meta{Len: 1500}, Classic, 0)
		}
		q.pie.dropProb, q.pie.qdelay, q.pie.state, q.pie.accuProb = tc.prob, 10*ms, inBurst, dpProbHigh-1
		v := q.Enqueue(Meta{Len: 1500, ECN: tc.ecn}, 0)
		if v.Action != tc.act || v.Reason != tc.why {
			t.Errorf("%v at p %d: %+v, want %v %v", tc.ecn, tc.prob, v, tc.act, tc.why)
		}
		if tc.act == Pass {
			marked := false
			for range 4 {
				_, v, _ := q.Dequeue(0)
				marked = marked || v.Action == Mark && v.Reason == ReasonClassic
			}
			if !marked {
				t.Errorf("%v at p %d: not marked at dequeue", tc.ecn, tc.prob)
			}
		}
	}
}

// floatDOCSISPIE is RFC 8034's control path as its pseudo-code reads, in
// float64 seconds and probabilities: the model the integer one must
// follow.
type floatDOCSISPIE struct{ p, old, allowance float64 }

func (f *floatDOCSISPIE) update(q float64) {
	if f.allowance > 0 {
		f.p = 0
	} else {
		d := 0.25*(q-0.010) + 2.5*(q-f.old)
		switch {
		case f.p < 0.000001:
			d /= 2048
		case f.p < 0.00001:
			d /= 512
		case f.p < 0.0001:
			d /= 128
		case f.p < 0.001:
			d /= 32
		case f.p < 0.01:
			d /= 8
		case f.p < 0.1:
			d /= 2
		case f.p < 1:
			d /= 0.5
		case f.p < 10:
			d /= 0.125
		default:
			d /= 0.03125
		}
		if f.p >= 0.1 && d > 0.02 {
			d = 0.02
		}
		p := f.p + d
		if q < 0.005 && f.old < 0.005 {
			p *= 0.98
		} else if q > 0.2 {
			p += 0.02
		}
		f.p = min(max(p, 0), 13.6)
	}
	f.allowance = max(f.allowance-0.016, 0)
	f.old = q
}

// The integer control path follows the float model over 20000 updates of
// a seeded random walk of the delay (0..400 ms, so every branch: decay,
// high delay, the 0.02 cap, every auto-scale row) with a burst allowance
// armed now and then. Each update can differ by at most 2 units of 2^-32
// (the increment's and the decay's truncation), so 20000 updates stay
// within 20000·2/2^32 ≈ 9.3e-6 of the model.
func TestDOCSISPIEMatchesFloatModel(t *testing.T) {
	d := newTestDOCSISPIE()
	var f floatDOCSISPIE
	rng := rand.New(rand.NewPCG(3, 4))
	q := int64(0)
	worst := 0.0
	var rows [17]int // which auto-scale row each update used
	for i := range 20000 {
		q = min(max(q+int64(rng.NormFloat64()*4e6), 0), 400*ms)
		if rng.IntN(500) == 0 {
			d.allowance, f.allowance = 142*ms, 0.142
		}
		rows[scaleShift(d.dropProb)-13]++
		d.update(q)
		f.update(float64(q) / 1e9)
		diff := math.Abs(float64(d.dropProb)/float64(dpOne) - f.p)
		worst = max(worst, diff)
		if diff > 9.4e-6 {
			t.Fatalf("update %d (qdelay %d ns): integer %d (%.9f), float %.9f", i, q, d.dropProb, float64(d.dropProb)/float64(dpOne), f.p)
		}
	}
	t.Logf("largest difference %.3g; updates per auto-scale shift %v", worst, rows)
	for i, s := range []uint{13, 15, 17, 19, 21, 23, 25, 27, 29} {
		if rows[s-13] == 0 {
			t.Errorf("auto-scale row %d (shift %d) never used", i, s)
		}
	}
}

// A live change of the Classic AQM (set --docsis-classic): DOCSIS-PIE
// starts afresh, PI2 goes on from the p' it finds, and the queue keeps
// its packets.
func TestDOCSISChangeClassic(t *testing.T) {
	q := newTestDOCSIS(t, func(c *DOCSISConfig) { c.Rate = 10_000_000 })
	now := int64(0)
	load := func(n int) {
		for range n {
			now += ms / 2
			q.Enqueue(Meta{Len: 1500, ECN: NotECT}, now)
			q.Advance(now)
		}
	}
	load(2000)
	if q.pie.dropProb == 0 || q.pi.prob != q.pie.baseProb() {
		t.Fatalf("pie: drop_prob %d, p' %d, want > 0 and √p_C", q.pie.dropProb, q.pi.prob)
	}
	pkts, _ := q.Len()
	cfg := q.Config()
	cfg.Classic = DOCSISClassicPI2
	if err := q.Change(cfg, now, nil); err != nil {
		t.Fatal(err)
	}
	if got, _ := q.Len(); got != pkts || q.pie.dropProb != 0 || q.pi.prob == 0 || q.pi.externalClassic {
		t.Fatalf("to pi2: %d packets (had %d), DOCSIS-PIE p %d, p' %d, external %v", got, pkts, q.pie.dropProb, q.pi.prob, q.pi.externalClassic)
	}
	load(10)
	cfg.Classic = DOCSISClassicPIE
	if err := q.Change(cfg, now, nil); err != nil {
		t.Fatal(err)
	}
	if q.pi.prob != 0 || !q.pi.externalClassic || q.NextUpdate() <= now {
		t.Fatalf("back to pie: p' %d, external %v, next update %d at %d", q.pi.prob, q.pi.externalClassic, q.NextUpdate(), now)
	}
}

// The delay estimate's arithmetic: r_C is the rate less the L queue's
// rate over the last interval (at most its 90 % share); the largest
// backlog at the fastest rate does not overflow.
func TestDOCSISClassicQdelay(t *testing.T) {
	q := newTestDOCSIS(t, func(c *DOCSISConfig) { c.Rate = 10_000_000 })
	for range 10 {
		q.pi.enqueueAs(Meta{Len: 1250}, Classic, 0) // 12500 B = 100000 bits
	}
	// L idle: 100000 bits at 10 Mbit/s = 10 ms.
	if d := q.classicQdelay(0); d != 10*ms {
		t.Errorf("L idle: %d ns, want 10 ms", d)
	}
	// L sent 10000 B in 16 ms = 5 Mbit/s: r_C 5 Mbit/s, 20 ms.
	q.lBytes = 10_000
	if d := q.classicQdelay(0); d != 20*ms {
		t.Errorf("L at 5 Mbit/s: %d ns, want 20 ms", d)
	}
	// L over its share: r_L = 9 Mbit/s, r_C 1 Mbit/s, 100 ms.
	q.lBytes = 1_000_000
	if d := q.classicQdelay(0); d != 100*ms {
		t.Errorf("L saturating: %d ns, want 100 ms", d)
	}
	if v := mulDiv(math.MaxUint32*8, 1_000_000_000, 1); v != math.MaxUint64 {
		t.Errorf("mulDiv saturates at %d", v)
	}
	if v := mulDiv(1<<44, 10_000_000_000, 8_000_000_000); v != 1<<44*10/8 {
		t.Errorf("mulDiv(2^44, 1e10, 8e9) = %d", v)
	}
}
