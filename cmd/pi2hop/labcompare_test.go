package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pi2hop/pi2hop/figure"
	"github.com/pi2hop/pi2hop/internal/plotfile"
	"github.com/pi2hop/pi2hop/invoker"
	"github.com/pi2hop/pi2hop/testbed/report"
)

// writeLabReport writes an l4s-demo report with the call's RTT p99 per
// run into dir.
func writeLabReport(t *testing.T, dir string, p99 map[string]float64) {
	t.Helper()
	r := &report.Report{Scenario: "l4s-demo", Title: "video call vs four bulk downloads", Config: map[string]any{}}
	for _, name := range []string{"dualpi2-l4s", "fifo-classic"} {
		r.Runs = append(r.Runs, report.Run{Name: name, Title: name, AQM: "dualpi2",
			Call:   &report.Call{ECN: "l4s", RTTMs: figure.Summary{N: 100, P50: p99[name] - 3, P99: p99[name]}, FPSMean: 28},
			Queues: []report.Queue{{Name: "C", SojournMs: figure.Summary{N: 10, P50: 4, P99: 9}}}})
	}
	if err := r.Write(dir, plotfile.Formats{"svg"}, invoker.User{}); err != nil {
		t.Fatal(err)
	}
}

// TestLabCompare: lab compare of two l4s-demo reports prints both
// columns and the better one, and writes the plots into --out.
func TestLabCompare(t *testing.T) {
	tmp := t.TempDir()
	a, b, out := filepath.Join(tmp, "monday"), filepath.Join(tmp, "tuesday"), filepath.Join(tmp, "cmp")
	writeLabReport(t, a, map[string]float64{"dualpi2-l4s": 24, "fifo-classic": 130})
	writeLabReport(t, b, map[string]float64{"dualpi2-l4s": 21, "fifo-classic": 140})
	stdout, _, err := runOut("lab", "compare", a, b, "--out", out, "--plot-format", "png")
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, l := range strings.Split(stdout, "\n") {
		lines = append(lines, strings.Join(strings.Fields(l), " "))
	}
	for _, want := range []string{"figure monday tuesday change better",
		"call RTT p99 (ms) 24 21 -12 % tuesday", "call RTT p99 (ms) 130 140 +8 % monday",
		"Comparison: " + filepath.Join(out, "compare.md") + " (2 plot files, png)"} {
		if !slices.Contains(lines, want) {
			t.Errorf("lab compare lacks the line %q:\n%s", want, stdout)
		}
	}
	for _, f := range []string{"compare_rtt.png", "compare_sojourn.png", "compare.md"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Error(err)
		}
	}
	for _, bad := range [][]string{{"lab", "compare", a}, {"lab", "compare", a, b, "--quick"}, {"lab", "compare", a, filepath.Join(tmp, "none")}} {
		if _, _, err := runOut(bad...); err == nil {
			t.Errorf("%q: want an error", bad)
		}
	}
}
