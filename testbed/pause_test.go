package testbed

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/pi2hop/pi2hop/hop"
	"github.com/pi2hop/pi2hop/testbed/report"
)

// pauseTrace is a trace of samples every 20 ms from 0 to 2 s, the steal
// counter and the wake-up probe's worst wake-up since the sample before
// given by steal and probeWorst (the first sample's probeWorst is -1, as
// sampleOf makes it).
func pauseTrace(steal, probeWorst func(at time.Duration) time.Duration) []queueSample {
	var s []queueSample
	for at := time.Duration(0); at <= 2*time.Second; at += 20 * ms1 {
		x := queueSample{at: at, steal: steal(at), probeWorst: int64(probeWorst(at))}
		if at == 0 {
			x.probeWorst = -1
		}
		s = append(s, x)
	}
	return s
}

// at returns a counter that is v from t on and before otherwise.
func at(t, before, v time.Duration) func(time.Duration) time.Duration {
	return func(x time.Duration) time.Duration {
		if x >= t {
			return v
		}
		return before
	}
}

// only returns a figure that is v at t and other elsewhere.
func only(t, other, v time.Duration) func(time.Duration) time.Duration {
	return func(x time.Duration) time.Duration {
		if x == t {
			return v
		}
		return other
	}
}

func sum(fs ...func(time.Duration) time.Duration) func(time.Duration) time.Duration {
	return func(x time.Duration) time.Duration {
		var s time.Duration
		for _, f := range fs {
			s += f(x)
		}
		return s
	}
}

func TestMachinePauses(t *testing.T) {
	const us1 = time.Microsecond
	quiet := only(-1, 500*us1, 0) // the probe on time: 0.5 ms
	none := only(-1, -1, 0)       // no figure
	tests := []struct {
		name              string
		steal, probeWorst func(time.Duration) time.Duration
		want              []span
		ok                bool
	}{
		{"none", at(0, 0, 5*time.Second), quiet, nil, true},
		{"unknown", none, none, nil, false},
		// 30 ms of steal counted in the sample at 500 ms: a pause of up
		// to 40 ms (the tick the counter rounds down) that ended by then, and as
		// long again to drain.
		{"steal, no probe", at(500*ms1, 0, 30*ms1), none, []span{{440 * ms1, 540 * ms1}}, true},
		// The probe 7 ms late in the sample at 1 s: a pause of up to
		// 8 ms that ended up to the probe's 20 ms report lag earlier.
		{"probe, steal unknown", none, only(1000*ms1, 0, 7*ms1), []span{{952 * ms1, 1008 * ms1}}, true},
		{"both in one sample", at(500*ms1, 0, 10*ms1), only(500*ms1, 0, 7*ms1), []span{{452 * ms1, 520 * ms1}}, true},
		// Steal at 500 ms, the probe 3 ms late at 540: one span.
		{"merged", at(500*ms1, 0, 10*ms1), only(540*ms1, 0, 3*ms1), []span{{460 * ms1, 544 * ms1}}, true},
		{"two", sum(at(200*ms1, 0, 10*ms1), at(1500*ms1, 0, 10*ms1)), only(-1, 0, 0), []span{{160 * ms1, 220 * ms1}, {1460 * ms1, 1520 * ms1}}, true},
		{"probe late by the threshold: no pause", at(0, 0, 0), only(1000*ms1, 0, ms1), nil, true},
		{"probe late beyond it", at(0, 0, 0), only(1000*ms1, 0, ms1+us1), []span{{980*ms1 - 22*ms1 - us1, 1002*ms1 + us1}}, true},
		// Steal unreadable mid-run: the probe still tells.
		{"steal lost", sum(at(1000*ms1, 0, -1-10*ms1), at(500*ms1, 0, 10*ms1)), quiet, nil, true},
		{"steal and probe lost", at(1000*ms1, 0, -1), at(1000*ms1, 0, -1), nil, false},
	}
	for _, tt := range tests {
		got, ok := machinePauses(pauseTrace(tt.steal, tt.probeWorst))
		if ok != tt.ok || !slices.Equal(got, tt.want) {
			t.Errorf("%s: spans %v ok %v, want %v %v", tt.name, got, ok, tt.want, tt.ok)
		}
	}
	if _, ok := machinePauses(nil); ok {
		t.Error("no samples: ok")
	}
}

func TestRTTOutside(t *testing.T) {
	spans := []span{{440 * ms1, 540 * ms1}, {1470 * ms1, 1540 * ms1}}
	// One sample every 10 ms from 0 to 2 s, each a 20 ms round trip, and
	// one of 200 ms at 700 ms, which began inside the first span.
	var rtt, at []time.Duration
	for t := time.Duration(0); t < 2*time.Second; t += 10 * ms1 {
		r := 20 * ms1
		if t == 700*ms1 {
			r = 200 * ms1
		}
		rtt, at = append(rtt, r), append(at, t)
	}
	kept, all := rttOutside(rtt, at, 100*ms1, spans)
	// From 100 ms: 190 samples. Left out: those taken in [440, 560]
	// (13) and in [1470, 1560] (10), edges included, and the long one.
	if all != 190 || len(kept) != 190-13-10-1 {
		t.Errorf("kept %d of %d, want %d of 190", len(kept), all, 190-24)
	}
	if slices.Max(kept) != 20 {
		t.Errorf("kept a sample of %v ms, want only the 20 ms ones", slices.Max(kept))
	}
	kept, all = rttOutside(rtt, at, 0, nil)
	if all != 200 || len(kept) != 200 {
		t.Errorf("no spans: kept %d of %d, want all 200", len(kept), all)
	}
}

// TestAnalyseCallOutsidePauses: a run whose host stole 30 ms, counted in
// the sample at 6 s (the one before at 5.9 s), leaves out the call's
// round trips that overlap 5.9 − 0.04 s to 6 + 0.04 s (a pause of up to
// 30 ms and the 10 ms tick, and as long to drain).
func TestAnalyseCallOutsidePauses(t *testing.T) {
	sp := RunSpec{Name: "x", Title: "X", Queue: dualPI2(0), RateBps: 10_000_000, RTT: 20 * ms1,
		Duration: 10 * time.Second, Warmup: 5 * time.Second}
	q := fakeQueues(window(sp))
	for i := range q.samples {
		if q.samples[i].at >= 6*time.Second {
			q.samples[i].steal = 30 * ms1
		}
	}
	res := &runResult{spec: sp, flows: []flowResult{videoResult()}, queues: q}
	c := analyse(res).Call
	// The samples after the warm-up, every 10 ms, are 21 ms round trips:
	// left out are those taken from 5.86 to 6.06 s, 21 of them (the one
	// at 6.06 s began at 6.039, inside).
	if c.RTTMs.N != 500 || c.RTTOutsidePausesMs.N != 500-21 {
		t.Errorf("kept %d of %d round trips, want 479 of 500", c.RTTOutsidePausesMs.N, c.RTTMs.N)
	}
	if math.Abs(c.PausedShare-21.0/500) > 1e-12 {
		t.Errorf("paused share %v, want 21/500", c.PausedShare)
	}
	// Steal unknown, the probe 7 ms late in the sample at 8 s: a pause of
	// up to 8 ms from up to 20 ms before the sample at 7.9 s, so round
	// trips overlapping 7.872 to 8.008 s: those taken from 7.88 to 8.02 s.
	for i := range q.samples {
		q.samples[i].steal = -1
		if q.samples[i].at == 8*time.Second {
			q.samples[i].probeWorst = int64(7 * ms1)
		}
	}
	if c := analyse(res).Call; c.RTTOutsidePausesMs.N != 500-15 {
		t.Errorf("probe only: kept %d of %d round trips, want 485 of 500", c.RTTOutsidePausesMs.N, c.RTTMs.N)
	}
	// Neither figure: unknown, and nothing left out.
	for i := range q.samples {
		q.samples[i].probeWorst = -1
	}
	if c := analyse(res).Call; c.PausedShare != -1 {
		t.Errorf("pauses unknown: share %v, want -1", c.PausedShare)
	}
}

// TestQueuesOutsidePauses: a 10 Mbit/s link busy all of 2 s but for two
// 20 ms intervals, whose packets also waited 20 ms instead of 1 ms, inside
// a pause of up to 40 ms that 30 ms of steal counted at 500 ms make
// (TestMachinePauses' span [440, 540] ms): the five intervals it touches,
// 5 % of the time, are left out, and what is left is the busy link and
// its 1 ms sojourns.
func TestQueuesOutsidePauses(t *testing.T) {
	const perInterval = 25_000 // bytes: 10 Mbit/s for 20 ms
	stalled := func(at time.Duration) bool { return at == 480*ms1 || at == 500*ms1 }
	build := func(steal func(time.Duration) time.Duration) []queueSample {
		s := pauseTrace(steal, only(-1, -1, 0))
		var bytes uint64
		for i := range s {
			s[i].elapsed = int64(s[i].at)
			if i == 0 {
				continue
			}
			sojourn := int64(ms1)
			if stalled(s[i].at) {
				sojourn = int64(20 * ms1)
			} else {
				bytes += perInterval
			}
			s[i].outBytes = bytes
			var l, c hop.Histogram
			for range 10 {
				l.Add(sojourn)
			}
			s[i].lSojourn, s[i].cSojourn = sparseOf(&l), sparseOf(&c)
		}
		return s
	}
	t.Run("steal", func(t *testing.T) {
		s := build(at(500*ms1, 0, 30*ms1))
		run := report.Run{RateBps: 10e6, Queues: []report.Queue{{Name: "L"}, {Name: "C"}}}
		queuesOutsidePauses(&run, s, 0, len(s)-1)
		l := run.Queues[0].SojournOutsidePausesMs
		if math.Abs(run.PausedTimeShare-0.05) > 1e-9 || math.Abs(run.UtilisationOutsidePauses-1) > 1e-9 ||
			l.N != 950 || l.P99 != 1 || l.Max != 1 || run.Queues[1].SojournOutsidePausesMs.N != 0 {
			t.Errorf("paused share %v, utilisation %v, L sojourn %+v, C %+v; want 0.05, 1, 950 packets at 1 ms, none",
				run.PausedTimeShare, run.UtilisationOutsidePauses, l, run.Queues[1].SojournOutsidePausesMs)
		}
	})
	t.Run("nothing to tell", func(t *testing.T) {
		s := build(only(-1, -1, 0))
		run := report.Run{RateBps: 10e6, Queues: []report.Queue{{Name: "L"}}}
		queuesOutsidePauses(&run, s, 0, len(s)-1)
		if run.PausedTimeShare != -1 || run.Queues[0].SojournOutsidePausesMs.N != 0 {
			t.Errorf("paused share %v, L sojourn %+v; want -1 and nothing", run.PausedTimeShare, run.Queues[0].SojournOutsidePausesMs)
		}
	})
}
