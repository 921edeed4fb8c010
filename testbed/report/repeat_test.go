package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/pi2hop/pi2hop/figure"
)

// TestCombine: three repetitions of a run become one with the median of
// every figure (nearest rank: one of the three values), each figure's
// range by its report.json path, and the series of the repetition
// closest to the medians.
func TestCombine(t *testing.T) {
	rep := func(util, p99, goodput float64, fps0 int) Run {
		return Run{Name: "l4s", Title: "L4S", Utilisation: util,
			Queues: []Queue{{Name: "L", SojournMs: figure.Summary{N: 100, P99: p99}}},
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

// TestRepeatReportHasEveryFigure: a lab --repeat 3 report gives, for
// every figure of a run, its median and range in report.json ("spread")
// and in report.md (the run's repetitions table).
func TestRepeatReportHasEveryFigure(t *testing.T) {
	rep := func(util, worst, floor, rtt99, loss float64) Run {
		return Run{Name: "l4s", Title: "L4S", Utilisation: util, HopWorstMs: worst, ProbeWorstMs: floor,
			Call:   &Call{Label: "call", RTTMs: figure.Summary{N: 50, P50: 20, P99: rtt99}, Loss: loss},
			Queues: []Queue{{Name: "L", SojournMs: figure.Summary{N: 100, P99: 1}}, {Name: "C", SojournMs: figure.Summary{N: 90, P99: 12}}},
			Flows:  []Flow{{Label: "bulk-1", GoodputBps: 4e6}, {Label: "bulk-2", GoodputBps: 5e6}}}
	}
	combined, err := Combine([]Run{rep(0.97, 40, 38, 25, 0.01), rep(0.95, 3, 2.5, 22, 0), rep(0.99, 5, 4, 30, 0.02)})
	if err != nil {
		t.Fatal(err)
	}
	r := &Report{Scenario: "l4s-demo", Title: "test", Runs: []Run{combined}}
	js, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var back struct {
		Runs []map[string]any `json:"runs"`
	}
	if err := json.Unmarshal(js, &back); err != nil {
		t.Fatal(err)
	}
	var md bytes.Buffer
	if err := r.Markdown(&md); err != nil {
		t.Fatal(err)
	}
	// Medians and ranges worked out from the three repetitions above.
	want := map[string]Range{
		"utilisation":               {0.97, 0.95, 0.99},
		"hop_worst_lateness_ms":     {5, 3, 40},
		"floor_worst_lateness_ms":   {4, 2.5, 38},
		"call.rtt_ms.p99":           {25, 22, 30},
		"call.loss":                 {0.01, 0, 0.02},
		"flows[bulk-2].goodput_bps": {5e6, 5e6, 5e6},
		"queues[C].sojourn_ms.p99":  {12, 12, 12},
		"queues[L].sojourn_ms.n":    {100, 100, 100},
	}
	spread, _ := back.Runs[0]["spread"].(map[string]any)
	for path, w := range want {
		g, ok := spread[path].(map[string]any)
		if !ok {
			t.Errorf("report.json: no spread for %s", path)
			continue
		}
		if g["median"] != w.Median || g["min"] != w.Min || g["max"] != w.Max {
			t.Errorf("report.json: spread %s = %v, want median %v, min %v, max %v", path, g, w.Median, w.Min, w.Max)
		}
		row := fmt.Sprintf("| %s | %s | %s | %s |", path, num(w.Median), num(w.Min), num(w.Max))
		if !strings.Contains(md.String(), row) {
			t.Errorf("report.md lacks the row %q", row)
		}
	}
	// Every figure of the run, not only those above: each number in the
	// run's JSON (but the spread itself) has its range.
	run := back.Runs[0]
	delete(run, "spread")
	walk("", run, func(path string, v float64) float64 {
		if path == "repeats" || path == "median_run" {
			return v
		}
		if _, ok := spread[path]; !ok {
			t.Errorf("report.json: figure %s has no spread", path)
		}
		return v
	})
}
