package report

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pi2hop/pi2hop/figure"
	"github.com/pi2hop/pi2hop/internal/plotfile"
	"github.com/pi2hop/pi2hop/invoker"
	"github.com/pi2hop/pi2hop/testbed/metrics"
)

func sampleRun(name, title, ecn string, rtt float64) Run {
	rtts := make([]float64, 500)
	for i := range rtts {
		rtts[i] = rtt + float64(i%50)/10
	}
	loss := 0.01
	return Run{
		Name: name, Title: title, AQM: "dualpi2", Buffer: "DualPI2 limit 10000 packets",
		RateBps: 10e6, BaseRTTMs: 20, DurationS: 20, WarmupS: 5,
		Call: &Call{Label: "call", ECN: ecn, RTTMs: figure.Summarise(rtts), Loss: 0.001,
			FPS: []int{30, 30, 29, 0, 12}, FPSMean: 20.2, FPSAtLeast25: 0.6, FPSZero: 0.2,
			Stalls: metrics.Stalls{Count: 1, TotalMs: 400, Rate: 0.02, PerMinute: 4}, GoodputBps: 2e6},
		Flows: []Flow{
			{Label: "call", Kind: "video", ECN: ecn, GoodputBps: 2e6, Loss: &loss},
			{Label: "bulk-1", Kind: "tcp-cubic", ECN: "classic", GoodputBps: 4e6},
			{Label: "bulk-2", Kind: "tcp-cubic", ECN: "classic", GoodputBps: 3.5e6},
		},
		Queues: []Queue{
			{Name: "L", SojournMs: figure.Summary{N: 10, P50: 0.3, P99: 1.2, Max: 2}, Packets: 100, Marked: 5},
			{Name: "C", SojournMs: figure.Summary{N: 10, P50: 14, P99: 24, Max: 30}, Packets: 900, Dropped: 40},
		},
		Utilisation: 0.97,
		Series: Series{
			FPS:          []int{30, 30, 29, 0, 12},
			Throughput:   map[string][]float64{"call": {2e6, 2.1e6}, "bulk-1": {4e6, 3.9e6}},
			QueueBinS:    0.1,
			QueueT:       []float64{5, 5.1, 5.2},
			QueueDelayMs: map[string][]float64{"L": {0.2, 0.5, 1}, "C": {12, 15, 18}},
		},
		RTTMs: map[string][]float64{"call": rtts},
		SojournDist: map[string]figure.Dist{
			"L": {X: []float64{0.2, 0.5, 2}, Share: []float64{0.5, 0.99, 1}, N: 100},
			"C": {X: []float64{10, 14, 30}, Share: []float64{0.5, 0.9, 1}, N: 900},
		},
	}
}

func sampleReport() *Report {
	return &Report{
		Scenario: "l4s-demo", Title: "video call vs four bulk downloads", Started: time.Unix(1_800_000_000, 0),
		ElapsedS: 61, Quick: true, Config: map[string]any{"rate": "10mbit"}, Versions: CurrentVersions(),
		Runs: []Run{
			sampleRun("dualpi2-l4s", "DualPI2, call on L4S", "l4s", 21),
			sampleRun("dualpi2-classic", "DualPI2, call classic", "classic", 35),
		},
		BDP: []BDPRow{
			{DistanceKm: 1000, RTTMs: 15, WindowBytes: 17520, LinkBps: 1e8, PredictedBps: 9.344e6, MeasuredBps: 9e6, RelErr: 0.037},
			{DistanceKm: 1000, RTTMs: 15, WindowBytes: 6553500, LinkBps: 1e8, PredictedBps: 1e8, MeasuredBps: 9.1e7, RelErr: 0.09},
		},
		Comparison: &Table{Title: "Apple", Header: []string{"metric", "Apple"}, Rows: [][]string{{"RTT", "45"}}},
		Checks:     []Check{{Name: "L4S RTT p99 < classic", Pass: true, Detail: "25.9 < 39.9 ms"}},
		Notes:      []string{"a note"},
	}
}

func TestWriteAndRead(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	r := sampleReport()
	if err := r.Write(dir, plotfile.Formats{"png"}, invoker.User{}); err != nil {
		t.Fatal(err)
	}
	wantPlots := []string{"rtt_cdf.png", "rtt_ccdf.png", "sojourn_cdf.png", "sojourn_ccdf.png", "fps.png",
		"queue_delay_dualpi2-l4s.png", "throughput_dualpi2-l4s.png",
		"queue_delay_dualpi2-classic.png", "throughput_dualpi2-classic.png", "bdp.png"}
	if strings.Join(r.Plots, " ") != strings.Join(wantPlots, " ") {
		t.Errorf("plots %v, want %v", r.Plots, wantPlots)
	}
	for _, p := range r.Plots {
		b, err := os.ReadFile(filepath.Join(dir, p))
		if err != nil || !bytes.HasPrefix(b, []byte("\x89PNG\r\n")) {
			t.Errorf("%s: not a PNG (err %v)", p, err)
		}
	}
	back, err := Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	if back.Scenario != "l4s-demo" || len(back.Runs) != 2 || back.Runs[0].Call.RTTMs != r.Runs[0].Call.RTTMs ||
		len(back.BDP) != 2 || back.Runs[1].Queues[1].SojournMs.P99 != 24 {
		t.Errorf("report.json did not round-trip: %+v", back)
	}
	md, err := os.ReadFile(filepath.Join(dir, MarkdownFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"# pi2hop lab:", "### Video call", "| RTT p99 (ms) | 25.9 | 39.9 |",
		"### Window-limited TCP", "### Checks", "[summary.csv](summary.csv)", "![rtt_cdf](rtt_cdf.png)", "\"rate\": \"10mbit\"", "- a note"} {
		if !bytes.Contains(md, []byte(want)) {
			t.Errorf("report.md lacks %q", want)
		}
	}
}

func TestTableText(t *testing.T) {
	var b bytes.Buffer
	tb := Table{Title: "T", Header: []string{"metric", "value"}, Rows: [][]string{{"RTT p99 (ms)", "1.5"}, {"loss", "12.0 %"}}}
	if err := tb.Text(&b); err != nil {
		t.Fatal(err)
	}
	want := "T\n  metric         value\n  RTT p99 (ms)     1.5\n  loss          12.0 %\n\n"
	if b.String() != want {
		t.Errorf("Text:\n%q\nwant\n%q", b.String(), want)
	}
}

func TestSummaryPicksHeadline(t *testing.T) {
	r := sampleReport()
	s := r.Summary()
	if len(s) != 2 || !strings.HasPrefix(s[0].Title, "Window-limited") || s[1].Title != "Checks" {
		t.Errorf("bdp summary: got %d tables, first %q", len(s), s[0].Title)
	}
	r.BDP = nil
	if s := r.Summary(); len(s) != 3 || s[0].Title != "Video call" || s[1].Title != "Apple" {
		t.Errorf("call summary: %d tables, first %q", len(s), s[0].Title)
	}
	// One flow, no call, no pair: its flows, then its queues (utilisation,
	// the machine's noise), then the checks.
	one := Report{Runs: []Run{{Name: "prague", Title: "P", Flows: []Flow{{Label: "prague"}},
		Queues: []Queue{{Name: "L"}}, StealMs: 40}}, Checks: []Check{{Name: "x", Pass: true}}}
	if s := one.Summary(); len(s) != 3 || s[0].Title != "Flows" || !strings.HasPrefix(s[1].Title, "Bottleneck queues") || s[2].Title != "Checks" {
		t.Errorf("one-flow summary: %d tables %+v", len(s), s)
	}
}

// TestFailedCheckSuggestsRepeat: a check that failed on single runs points
// at --repeat, one judged on medians or one that passed does not.
func TestFailedCheckSuggestsRepeat(t *testing.T) {
	for _, tt := range []struct {
		name    string
		pass    bool
		repeats int
		want    bool
	}{
		{"failed, one run", false, 0, true},
		{"failed, medians of 3", false, 3, false},
		{"passed, one run", true, 0, false},
	} {
		r := &Report{Runs: []Run{{Name: "a", Repeats: tt.repeats}}, Checks: []Check{{Name: "x", Pass: tt.pass}}}
		got := strings.Contains(strings.Join(r.checkTable().Notes, " "), "--repeat 3")
		if got != tt.want {
			t.Errorf("%s: note suggests --repeat: %v, want %v", tt.name, got, tt.want)
		}
	}
}

// TestECNFaultTable: the ecn-faults scenario's headline table has one row
// per run with what validation found and what the call sent at the end,
// and says so when none of it was acknowledged (a naive call through
// drop-ect).
func TestECNFaultTable(t *testing.T) {
	r := &Report{Scenario: "ecn-faults", Runs: []Run{
		{Title: "bleach before, validation on", ECNFault: "bleach",
			Call: &Call{ECN: "l4s", ECNValidation: "failed", ECNFailReason: "bleached", ECNFailS: 0.25, FellBack: true,
				RTTMs: figure.Summary{N: 900}},
			Queues: []Queue{{Name: "L", Marked: 3}, {Name: "C", Dropped: 7}}},
		{Title: "ce-bleach after, validation off", ECNFault: "ce-bleach,after", Call: &Call{ECN: "l4s", ECNValidation: "off", RTTMs: figure.Summary{N: 900}}},
		{Title: "drop-ect before, validation off", ECNFault: "drop-ect", Call: &Call{ECN: "l4s", ECNValidation: "off"}},
	}}
	ts := r.Summary()
	if len(ts) == 0 || !strings.HasPrefix(ts[0].Title, "ECN path faults") {
		t.Fatalf("summary tables %v: want the ECN faults table first", ts)
	}
	rows := ts[0].Rows
	if len(rows) != 3 {
		t.Fatalf("%d rows, want 3", len(rows))
	}
	for i, want := range [][]string{
		{"bleach before, validation on", "bleach", "failed: bleached at 0.25 s", "Not-ECT, loss-only"},
		{"ce-bleach after, validation off", "ce-bleach,after", "off", "ECT(1)"},
		{"drop-ect before, validation off", "drop-ect", "off", "ECT(1), nothing acknowledged"},
	} {
		if got := rows[i][:4]; strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("row %d starts %q, want %q", i, got, want)
		}
	}
	if got := rows[2][4:6]; strings.Join(got, "|") != "–|–" {
		t.Errorf("row 2 RTT p50, p99 %q, want – for no round trip", got)
	}
	if got := rows[0][10:14]; strings.Join(got, "|") != "3|0|–|7" {
		t.Errorf("row 0 queues %q, want L marked 3, dropped 0, C p99 –, dropped 7", got)
	}
}
