package report

import (
	"testing"

	"github.com/pi2hop/pi2hop/dist"
)

// TestCombine: three repetitions of a run become one with the median of
// every figure (nearest rank: one of the three values), each figure's
// range by its report.json path, and the series of the repetition
// closest to the medians.
func TestCombine(t *testing.T) {
	rep := func(util, p99, goodput float64, fps0 int) Run {
		return Run{Name: "l4s", Title: "L4S", Utilisation: util,
			Queues: []Queue{{Name: "L", SojournMs: dist.Summary{N: 100, P99: p99}}},
			Flows:  []Flow{{Label: "bulk-1", GoodputBps: goodput}},
			Series: Series{FPS: []int{fps0}}, RTTMs: map[string][]float64{"call": {float64(fps0)}}}
	}
	// Repetition 2 is the median of utilisation and goodput, 3 of p99.
	reps := []Run{rep(0.90, 3.0, 8e6, 1), rep(0.95, 1.0, 9e6, 2), rep(0.99, 2.0, 10e6, 3)}
	got, err := Combine(reps)
	if err != nil {
		t.Fatal(err)
	}
	if got.Utilisation != 0.95 || got.Queues[0].SojournMs.P99 != 2.0 || got.Flows[0].GoodputBps != 9e6 {
		t.Errorf("medians: utilisation %v, L p99 %v, goodput %v; want 0.95, 2, 9e6",
			got.Utilisation, got.Queues[0].SojournMs.P99, got.Flows[0].GoodputBps)
	}
	for path, want := range map[string]Range{
		"utilisation":               {0.95, 0.90, 0.99},
		"queues[L].sojourn_ms.p99":  {2, 1, 3},
		"flows[bulk-1].goodput_bps": {9e6, 8e6, 10e6},
		"queues[L].sojourn_ms.n":    {100, 100, 100},
	} {
		if g := got.Spread[path]; g != want {
			t.Errorf("spread %s = %+v, want %+v", path, g, want)
		}
	}
	// Repetition 2: distance 0 + 1/2 + 0; 1: 1/2+1/2+1/2; 3: 1/2+0+1/2.
	if got.Repeats != 3 || got.MedianRun != 2 || got.Series.FPS[0] != 2 || got.RTTMs["call"][0] != 2 {
		t.Errorf("repeats %d, median run %d (series %v, samples %v); want 3, 2", got.Repeats, got.MedianRun, got.Series.FPS, got.RTTMs)
	}
	if _, ok := got.Spread["series.fps"]; ok {
		t.Error("a series counted as a figure")
	}
	one, _ := Combine(reps[:1])
	if one.Repeats != 0 || one.Spread != nil || one.Utilisation != 0.90 {
		t.Errorf("one repetition changed: %+v", one)
	}
}
