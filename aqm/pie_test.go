package aqm

import (
	"math"
	"math/rand/v2"
	"testing"
)

func newTestPIE(t testing.TB, mod func(*PIEConfig)) *PIE {
	t.Helper()
	return newTestQueue(t, DefaultPIEConfig(), mod, func(c PIEConfig) (*PIE, error) { return NewPIE(c, rand.New(rand.NewPCG(3, 0x5eed))) })
}

// A constant queue delay of 20 ms (1000-byte packets in and out every
// 1 ms, each leaving 20 ms after it came) against RFC 8033 §4.2 with the
// kernel's integers. Psched time is ns >> 6: 20 ms = 312500 ticks,
// target 15 ms = 234375. alpha = 2·⌊MAX_PROB/15625000⌋ >> 4 =
// 2·4611686018 >> 4 = 576460752, beta = 20·4611686018 >> 4 = 5764607522.
//
// Update 1 (500 ms, the kernel's first timer): p = 0 is below 10 % and
// below each of 1 %, ..., 0.0001 %, so alpha and beta shift right by
// 1 + 5·2 = 11 (RFC 8033's ÷2048 for p < 0.000001): 281474 and 2814749;
// Δp = 281474·(312500 − 234375) + 2814749·(312500 − 0) = 901599218750
// = 1.25122e-5 of MAX_PROB (RFC: (0.125·5 ms + 1.25·20 ms)/2048 =
// 1.25122e-5).
//
// Update 2 (515 ms): p is in [0.001 %, 0.01 %): shift 1 + 3·2 = 7 (÷128):
// alpha 4503599; the delay did not change, so Δp = 4503599·78125 =
// 351843671875 and p = 1253442890625 = 1.73950e-5 (RFC: 1.25122e-5 +
// 0.125·5 ms/128 = 1.73950e-5).
func TestPIEProbabilityConstantQueue(t *testing.T) {
	q := newTestPIE(t, nil)
	for i := range 20 {
		mustEnqueue(t, q, pkt(NotECT, 1000), int64(i)*ms)
	}
	want := map[int64]uint64{500 * ms: 901599218750, 515 * ms: 1253442890625}
	rfc := map[int64]float64{500 * ms: 1.2512207e-5, 515 * ms: 1.73950195e-5}
	for now := 20 * ms; now <= 515*ms; now += ms {
		if now >= q.NextUpdate() {
			q.Advance(now)
			if w, ok := want[now]; ok {
				if q.prob != w {
					t.Errorf("t=%v: prob %d, want %d", now/ms, q.prob, w)
				}
				if got := float64(q.prob) / PIEMaxProb; math.Abs(got-rfc[now])/rfc[now] > 1e-5 {
					t.Errorf("t=%v: prob %.6g, RFC 8033 gives %.6g", now/ms, got, rfc[now])
				}
			}
		}
		if _, v := mustDequeue(t, q, now); v.Action != Pass {
			t.Fatalf("t=%v: %+v", now, v)
		}
		mustEnqueue(t, q, pkt(NotECT, 1000), now)
		if q.qdelay != 312500 {
			t.Fatalf("t=%v: qdelay %d ticks, want 312500 (20 ms)", now/ms, q.qdelay)
		}
	}
	if q.NextUpdate() != 530*ms {
		t.Errorf("next update %v, want 530 ms (500 ms, then every 15 ms)", q.NextUpdate())
	}
}

// Above 10 %, one update raises p by at most 2 % (MAX_PROB/100·2) unless
// the delay exceeds 250 ms, which adds another 2 %.
func TestPIEStepCapAndHighDelay(t *testing.T) {
	for _, tc := range []struct {
		name   string
		qdelay int64 // ticks
		want   uint64
	}{
		{"200 ms", 200 * ms >> psShift, PIEMaxProb/2 + PIEMaxProb/100*2},
		{"300 ms", 300 * ms >> psShift, PIEMaxProb/2 + PIEMaxProb/100*2 + PIEMaxProb/50},
	} {
		q := newTestPIE(t, nil)
		mustEnqueue(t, q, pkt(NotECT, 1000), 0)
		q.prob, q.qdelay, q.qdelayOld = PIEMaxProb/2, tc.qdelay, 0
		q.calculateProbability()
		if q.prob != tc.want {
			t.Errorf("%s: prob %d, want %d", tc.name, q.prob, tc.want)
		}
	}
}

// RFC 8033 §5.1 / sch_pie: with ECN on, an ECN-capable packet the early
// drop picks is marked while p <= 10 % (MAX_PROB/10) and dropped above;
// Not-ECT is always dropped; with ECN off everything is dropped.
func TestPIEECNBelowTenPercent(t *testing.T) {
	for _, tc := range []struct {
		name     string
		ecn      bool
		e        ECN
		prob     uint64
		wantMark bool
	}{
		{"ECT(0) at 10 %", true, ECT0, PIEMaxProb / 10, true},
		{"ECT(1) at 5 %", true, ECT1, PIEMaxProb / 20, true},
		{"ECT(0) just above 10 %", true, ECT0, PIEMaxProb/10 + 1, false},
		{"Not-ECT at 5 %", true, NotECT, PIEMaxProb / 20, false},
		{"ECT(0) at 5 %, noecn", false, ECT0, PIEMaxProb / 20, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := newTestPIE(t, func(c *PIEConfig) { c.ECN, c.Limit = tc.ecn, 100000 })
			for range 3 {
				mustEnqueue(t, q, pkt(NotECT, 1500), 0)
			}
			q.prob, q.burstTime, q.qdelay = tc.prob, 0, 20*ms>>psShift
			var drops, passes int
			for range 2000 {
				if v := q.Enqueue(pkt(tc.e, 1500), 0); v.Action == Drop {
					if v.Reason != ReasonPIE {
						t.Fatalf("drop reason %v", v.Reason)
					}
					drops++
				} else {
					passes++
				}
			}
			marks := int(q.Stats(0).PIE.ECNMark)
			if tc.wantMark {
				if drops != 0 || marks == 0 {
					t.Errorf("%d drops, %d marks: want marks only", drops, marks)
				}
				// Marks are reported at dequeue with reason pie.
				var seen int
				for {
					_, v, ok := q.Dequeue(ms)
					if !ok {
						break
					}
					if v.Action == Mark && v.Reason == ReasonPIE {
						seen++
					}
				}
				if seen != marks {
					t.Errorf("dequeued %d marked packets, ecn_mark %d", seen, marks)
				}
			} else if marks != 0 || drops == 0 {
				t.Errorf("%d drops, %d marks: want drops only", drops, marks)
			}
		})
	}
}

// The burst allowance (150 ms of dequeue time after a quiet period)
// suppresses early drops, however high p is.
func TestPIEBurstAllowance(t *testing.T) {
	q := newTestPIE(t, func(c *PIEConfig) { c.Limit = 10000 })
	for range 3 {
		mustEnqueue(t, q, pkt(NotECT, 1500), 0)
	}
	q.prob, q.qdelay = PIEMaxProb/2, 100*ms>>psShift
	for range 500 {
		mustEnqueue(t, q, pkt(NotECT, 1500), 0)
	}
	// Dequeues 1 ms apart use up the allowance: 150 ms = 2343750 ticks.
	for i := int64(1); i <= 151; i++ {
		mustDequeue(t, q, i*ms)
	}
	if q.burstTime != 0 {
		t.Fatalf("burst_time %d after 150 ms of dequeues, want 0", q.burstTime)
	}
	drops := 0
	for range 100 {
		if q.Enqueue(pkt(NotECT, 1500), 151*ms).Action == Drop {
			drops++
		}
	}
	if drops == 0 {
		t.Error("no early drop at p = 50 % without burst allowance")
	}
}

// dq_rate_estimator: 17 packets of 1000 bytes dequeued 128 µs (2000
// ticks) apart with at least 16 KiB queued: dq_count reaches 17000 over
// 16·2000 ticks, so avg_dq_rate = (17000 << 8)/32000 = 136 (bytes per
// tick << 8), shown as 136·15625000 >> 8 = 8300781 bytes/s. The next
// update's delay is (backlog << 8)/avg = (23000 << 8)/136 = 43294 ticks
// (2.77 ms).
func TestPIEDQRateEstimator(t *testing.T) {
	q := newTestPIE(t, func(c *PIEConfig) { c.DQRateEstimator = true })
	for range 40 {
		mustEnqueue(t, q, pkt(NotECT, 1000), 0)
	}
	for i := range int64(17) {
		mustDequeue(t, q, ms+i*128_000)
	}
	s := q.Stats(0)
	if q.avgDQRate != 136 || s.PIE.AvgDQRate != 8300781 || !s.PIE.DQRateEstimating {
		t.Fatalf("avg_dq_rate %d (%d B/s), want 136 (8300781 B/s)", q.avgDQRate, s.PIE.AvgDQRate)
	}
	q.Advance(500 * ms)
	if q.qdelay != 43294 {
		t.Errorf("qdelay %d ticks, want 43294", q.qdelay)
	}
}

func TestPIELimitAndValidate(t *testing.T) {
	q := newTestPIE(t, func(c *PIEConfig) { c.Limit = 2 })
	mustEnqueue(t, q, pkt(ECT0, 100), 0)
	mustEnqueue(t, q, pkt(ECT0, 100), 0)
	if v := q.Enqueue(pkt(ECT0, 100), 0); v.Action != Drop || v.Reason != ReasonLimit {
		t.Fatalf("over limit: %+v", v)
	}
	if s := q.Stats(0); s.PIE.Overlimit != 1 || s.PIE.Dropped != 1 || s.PIE.PacketsIn != 2 {
		t.Fatalf("xstats %+v", s.PIE)
	}
	if _, err := NewPIE(DefaultPIEConfig(), nil); err == nil {
		t.Error("NewPIE without a random source: no error")
	}
	for _, tc := range []struct {
		mod   func(*PIEConfig)
		field string
	}{
		{func(c *PIEConfig) { c.Alpha = 33 }, "alpha"},
		{func(c *PIEConfig) { c.Beta = 33 }, "beta"},
		{func(c *PIEConfig) { c.Tupdate = 0 }, "tupdate"},
		{func(c *PIEConfig) { c.Limit = 0 }, "limit"},
	} {
		cfg := DefaultPIEConfig()
		tc.mod(&cfg)
		if ce, ok := cfg.Validate().(*ConfigError); !ok || ce.Field != tc.field {
			t.Errorf("Validate(%+v): want a ConfigError on %q", cfg, tc.field)
		}
	}
}
