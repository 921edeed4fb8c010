package report

import (
	"strings"
	"testing"

	"github.com/pi2hop/pi2hop/figure"
)

func TestAppTable(t *testing.T) {
	app := func(p99 float64, sent ECNPackets, code int, failed bool, metric float64) *App {
		a := &App{Sent: sent, Received: ECNPackets{NotECT: sent.Total()}, UpBps: 1e6, DownBps: 8.5e6,
			Client: AppExit{Command: "c", Code: code, Failed: failed, RunS: 20}}
		if p99 > 0 {
			a.RTTMs = &figure.Summary{N: 10, P50: p99 - 2, P99: p99, Max: p99 + 1}
		}
		if metric > 0 {
			a.Metrics = []AppMetric{{Name: "frame_ms", Unit: "ms", From: "client", Summary: figure.Summary{N: 2, P50: metric, P99: metric, Mean: metric}}}
		}
		return a
	}
	r := &Report{Runs: []Run{
		{Name: "l4s", Title: "l4s: DualPI2", App: app(23.5, ECNPackets{ECT1: 999, NotECT: 1}, 0, false, 16)},
		{Name: "classic", Title: "classic: bleached", App: app(0, ECNPackets{ECT1: 100}, 1, true, 0)},
	}}
	tb, ok := r.appTable()
	if !ok {
		t.Fatal("no app table")
	}
	var b strings.Builder
	if err := tb.Text(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"l4s: DualPI2", "classic: bleached",
		"RTT p99 (ms)", "23.5", "–", // the classic run has no RTT
		"8.50 / 1.00",                // goodput down / up
		"ECT(1) 100% → Not-ECT 100%", // codepoints under 1 % are not named
		"client frame_ms p50 / p99 / mean", "16 / 16 / 16 ms",
		"FAILED: exit 1 after 20.0 s",
		"classic: bleached: the app did not run to its end",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("app table lacks %q:\n%s", want, out)
		}
	}
}
