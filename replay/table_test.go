package replay

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/internal/jsonline"
)

// Four 1500-byte packets at once into a 2-packet FIFO at 1 Mbit/s (12 ms
// each on the wire): P0 leaves at once, P1 and P2 wait 12 and 24 ms, P3
// is refused. Sojourns {0, 12, 24} ms: by nearest rank p50 is the 2nd,
// 12 ms, p99 the 3rd, 24 ms.
func TestTableCountsAndSojourns(t *testing.T) {
	cfg := fifo(1_000_000, 2)
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	tab := NewTable()
	src := sliceSource(slices.Clone(pkts(1500, aqm.ECT0, 0, 0, 0, 0)))
	res, err := e.Run(context.Background(), &src, tab)
	if err != nil {
		t.Fatal(err)
	}
	s := tab.sojourn[QueueIndex(aqm.Classic)]
	near := func(got, want int64) bool { return got >= want-want/100 && got <= want }
	if s.Count() != 3 || !near(s.Quantile(0.5), 12*ms) || !near(s.Quantile(0.99), 24*ms) || s.Max() != 24*ms {
		t.Errorf("sojourns: %d, p50 %d, p99 %d, max %d; want 3, 12 ms, 24 ms, 24 ms", s.Count(), s.Quantile(0.5), s.Quantile(0.99), s.Max())
	}
	// The caller renders the queue's knobs (instance's table of settings):
	// the summary carries their JSON, the table their words.
	in := SummaryInput{Trace: "t.csv", Seed: 1, MTU: 1500, Queue: []jsonline.Field{{Key: "limit", JSON: "2", Words: "2"}, {Key: "made-up-time", JSON: "1000000", Words: "1ms"}}}
	summary := WriteSummary(&jsonline.Line{}, &res, in, cfg.Link, cfg.Queue)
	if !strings.Contains(string(summary), `"aqm":"fifo","limit":2,"made-up-time":1000000}`) {
		t.Errorf("summary %s: want the knobs given in its config", summary)
	}
	var b strings.Builder
	if err := tab.Write(&b, &res, summary, aqm.KindFIFO, in.Queue); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	var cLine []string
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) > 0 && f[0] == "C" {
			cLine = f
		}
	}
	if len(cLine) < 5 || strings.Join(cLine[:5], " ") != "C 4 3 0 1" || cLine[len(cLine)-2] != "24.00" {
		t.Errorf("C row %q, want arrivals 4, sent 3, marked 0, dropped 1, max 24.00 ms:\n%s", cLine, out)
	}
	for _, want := range []string{"C: drops limit 1\n", "config: trace t.csv, rate 1mbit, rate_bps 1000000, delay 0s,", "aqm fifo, limit 2, made-up-time 1ms\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("%q not in:\n%s", want, out)
		}
	}
}
