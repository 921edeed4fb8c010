package report

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/pi2hop/pi2hop/figure"
	"github.com/pi2hop/pi2hop/internal/jsondoc"
	"github.com/pi2hop/pi2hop/invoker"
)

// TestReportJSONMatchesDocs writes the sample report and checks its
// report.json against docs/json.md (object report): an undocumented
// field, a documented one missing or a value of another type fails,
// naming the table to fix.
func TestReportJSONMatchesDocs(t *testing.T) {
	page, err := os.ReadFile("../../docs/json.md")
	if err != nil {
		t.Fatal(err)
	}
	schema, err := jsondoc.Parse(page, "docs/json.md")
	if err != nil {
		t.Fatal(err)
	}
	r := sampleReport()
	r.About = "why"
	r.Runs[0].Fairness = &Fairness{L4SLabel: "call", ClassicLabel: "bulk-1", Ratio: 0.5, Jain: 0.9}
	r.Runs[0].Series.HopWorstMs = []float64{0.1}
	r.Runs[0].Series.ProbeWorstMs = []float64{0.05}
	r.Runs[1].Repeats, r.Runs[1].MedianRun = 3, 2
	r.Runs[1].Spread = map[string]Range{"runs.1.utilisation": {Median: 0.97, Min: 0.95, Max: 0.98}}
	r.Runs[1].Error = "a failure"
	sum := &figure.Summary{N: 3, Min: 20, Mean: 21, P50: 21, P95: 22, P99: 22, Max: 22}
	r.Runs[0].App = &App{Flows: 2, RTTMs: sum, ClientRTTMs: sum, ServerRTTMs: sum, RTTNote: "a note", UpBps: 1, DownBps: 2,
		Sent: ECNPackets{ECT1: 10}, ClientSent: ECNPackets{ECT1: 5}, Received: ECNPackets{CE: 1, ECT1: 9}, FellBack: 1, Marks: 1, Drops: 1,
		Client:  AppExit{Command: "ping x", RunS: 20, StderrTail: []string{"a line"}},
		Server:  &AppExit{Command: "srv", Code: 143, RunS: 25, Stopped: true},
		Metrics: []AppMetric{{Name: "frame_ms", Unit: "ms", From: "client", Summary: *sum}}}
	r.Findings = []Finding{{Question: "the app sent ECT(1) on the l4s path", Answer: "yes", Detail: "100 %"}}
	dir := filepath.Join(t.TempDir(), "out")
	if err := r.Write(dir, nil, invoker.User{}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, JSONFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range schema.Check("report.json", "report", b) {
		t.Error(e)
	}
}
