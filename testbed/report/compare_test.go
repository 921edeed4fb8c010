package report

import (
	"bytes"
	"encoding/csv"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pi2hop/pi2hop/internal/plotfile"
	"github.com/pi2hop/pi2hop/invoker"
)

// TestSummaryCSV: summary.csv has one row per run, the columns the runs
// have (no bdp column without a bdp table), a cell per figure as
// report.json has it and empty where the run lacks it.
func TestSummaryCSV(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	r := sampleReport()
	r.BDP = nil
	r.Runs = append(r.Runs, Run{Name: "fifo", Title: "FIFO", AQM: "fifo", Queues: []Queue{{Name: "C", Dropped: 7}},
		Flows: []Flow{{Label: "bulk-1", Kind: "tcp-cubic", GoodputBps: 9.5e6}}, Error: "boom", StealMs: -1})
	if err := r.Write(dir, plotfile.Formats{"svg"}, invoker.User{}); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(dir, CSVFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if fi, _ := f.Stat(); fi.Mode().Perm() != invoker.ModeReport {
		t.Errorf("summary.csv mode %v, want %v", fi.Mode().Perm(), invoker.ModeReport)
	}
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 4 {
		t.Fatalf("%d rows, want a header and 3 runs", len(rows))
	}
	col := map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	for _, absent := range []string{"bdp_measured_mbit", "rate_ratio"} {
		if _, ok := col[absent]; ok {
			t.Errorf("column %s: no run has it", absent)
		}
	}
	for _, c := range []struct {
		row        int
		key, value string
	}{
		{1, "scenario", "l4s-demo"}, {1, "run", "dualpi2-l4s"}, {1, "call_ecn", "l4s"},
		{1, "call_rtt_p99_ms", "25.9"}, {2, "call_rtt_p99_ms", "39.9"}, {1, "call_loss", "0.001"},
		{1, "l_sojourn_p99_ms", "1.2"}, {1, "c_dropped", "40"}, {1, "bulk_goodput_mbit", "7.5"},
		{1, "flow_bulk-2_goodput_mbit", "3.5"}, {1, "flow_call_loss", "0.01"}, {1, "utilisation", "0.97"},
		{3, "call_rtt_p99_ms", ""}, {3, "l_sojourn_p99_ms", ""}, {3, "c_dropped", "7"},
		{3, "flow_bulk-1_goodput_mbit", "9.5"}, {3, "flow_bulk-2_goodput_mbit", ""}, {3, "error", "boom"},
		{3, "host_steal_ms", ""},
	} {
		i, ok := col[c.key]
		if !ok {
			t.Errorf("no column %s in %v", c.key, rows[0])
			continue
		}
		if got := rows[c.row][i]; got != c.value {
			t.Errorf("row %d %s = %q, want %q", c.row, c.key, got, c.value)
		}
	}
}

// TestCompare: two l4s-demo reports written to disk, read back and set
// side by side: a column each, the better one named per figure (lower
// RTT, higher fps), the second's change from the first, configuration
// that differs, and a plot of each kind written.
func TestCompare(t *testing.T) {
	tmp := t.TempDir()
	a, b := sampleReport(), sampleReport()
	b.Config = map[string]any{"rate": "20mbit"}
	b.Runs[0].Call.RTTMs.P99 = 30 // worse than a's 25.9
	b.Runs[0].Call.FPSMean = 25   // better than a's 20.2
	b.Runs[0].Repeats = 3
	b.Runs = b.Runs[:1]
	b.Runs = append(b.Runs, sampleRun("fifo-classic", "FIFO, call classic", "classic", 90))
	var dirs []string
	for i, r := range []*Report{a, b} {
		d := filepath.Join(tmp, []string{"before", "after"}[i])
		if err := r.Write(d, plotfile.Formats{"png"}, invoker.User{}); err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, d)
	}
	c, err := ReadComparison(dirs)
	if err != nil {
		t.Fatal(err)
	}
	ts := c.Tables()
	var text bytes.Buffer
	for _, tb := range ts {
		_ = tb.Text(&text)
	}
	if len(ts) != 4 {
		t.Fatalf("%d tables, want reports + 3 runs:\n%s", len(ts), &text)
	}
	if !strings.Contains(strings.Join(ts[0].Notes, " "), `rate "10mbit" vs "20mbit"`) {
		t.Errorf("reports table notes %q: want the rate that differs", ts[0].Notes)
	}
	l4s := ts[1]
	if got := strings.Join(l4s.Header, "|"); got != "figure|before|after|change|better" {
		t.Errorf("header %q", got)
	}
	row := func(tb Table, name string) []string {
		for _, r := range tb.Rows {
			if r[0] == name {
				return r
			}
		}
		t.Errorf("%s: no row %q", tb.Title, name)
		return make([]string, 5)
	}
	for _, want := range [][]string{
		{"call RTT p99 (ms)", "25.9", "30", "+16 %", "before"},
		{"call mean fps", "20.2", "25", "+24 %", "after"},
		{"call RTT p50 (ms)", "23.4", "23.4", "0 %", "same"},
		{"L-queue CE marked", "5", "5", "0 %", ""},
		{"call loss", "0.1 %", "0.1 %", "0 %", "same"},
	} {
		if got := row(l4s, want[0]); strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("row %q, want %q", got, want)
		}
	}
	if notes := strings.Join(l4s.Notes, " "); notes != "after: figures are the medians of 3 repetitions." {
		t.Errorf("notes %q: want after's medians named", notes)
	}
	if notes := strings.Join(ts[2].Notes, " "); notes != "after has no run dualpi2-classic." {
		t.Errorf("notes %q: want the missing run named", notes)
	}
	if got := row(ts[2], "call RTT p99 (ms)"); strings.Join(got[1:], "|") != "39.9|–||" {
		t.Errorf("run only in before: %q", got)
	}
	if got := row(ts[3], "call RTT p99 (ms)"); strings.Join(got[1:], "|") != "–|94.9||" {
		t.Errorf("run only in after: %q", got)
	}
	out := filepath.Join(tmp, "cmp")
	plots, err := c.Write(out, plotfile.Formats{"png", "svg"}, invoker.User{})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(plots, " "); got != "compare_rtt.png compare_rtt.svg compare_sojourn.png compare_sojourn.svg" {
		t.Errorf("plots %s", got)
	}
	for _, p := range append(plots, CompareFile) {
		if fi, err := os.Stat(filepath.Join(out, p)); err != nil || fi.Size() == 0 {
			t.Errorf("%s: %v", p, err)
		}
	}
	if _, err := c.Write(out, nil, invoker.User{}); err == nil {
		t.Error("a second Write into the same folder: want an error, the folder exists")
	}
}

// TestCompareRTTFallsBackToFlows: without a call, the RTT bars are the
// flows' that have RTT figures.
func TestCompareRTTFallsBackToFlows(t *testing.T) {
	r := &Report{Runs: []Run{{Name: "p", Flows: []Flow{{Label: "prague", RTTMs: &sampleReport().Runs[0].Call.RTTMs}, {Label: "bulk"}}}}}
	c := &Comparison{Names: []string{"x", "y"}, Reports: []*Report{r, r}}
	gs := c.rttGroups()
	if len(gs) != 1 || gs[0].label != "p\nprague" || gs[0].p99[1] != 25.9 {
		t.Errorf("groups %+v, want p, prague with p99 25.9", gs)
	}
}
