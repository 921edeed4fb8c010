package check

import (
	"net/netip"
	"strings"
	"testing"
	"time"
)

// A path with no bottleneck: the verdict's sentence is printed once, and
// the idle round trip is one figure, named once.
func TestReportNoBottleneckSaysItOnce(t *testing.T) {
	f := LoadFigures{MaxRate: 100e6, Base: 10 * time.Microsecond, L4SP50: 40 * time.Microsecond, L4SP99: 90 * time.Microsecond,
		ClassicP50: 40 * time.Microsecond, ClassicP99: 95 * time.Microsecond, L4SProbes: 100, ClassicProbes: 100,
		L4SGoodput: 48e6, CGoodput: 48e6}
	r := &Result{Peer: netip.MustParseAddrPort("127.0.0.1:9332"), Probes: 25, RTT: 60 * time.Microsecond,
		Forward: Direction{Verdict: Verdict{Kind: Passes}}, Reverse: Direction{Verdict: Verdict{Kind: Passes}},
		Load: &Load{Duration: 5 * time.Second, MaxRate: 100e6, Figures: f, Verdict: Classify(f)}}
	if r.Load.Verdict.Kind != NotSaturated {
		t.Fatalf("verdict %q, want %q", r.Load.Verdict.Kind, NotSaturated)
	}
	var b strings.Builder
	if err := r.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if n := strings.Count(out, notSatDetail); n != 1 {
		t.Errorf("%q %d times, want once:\n%s", notSatDetail, n, out)
	}
	if n := strings.Count(out, "idle"); n != 1 || !strings.Contains(out, "idle RTT 0.06 ms") {
		t.Errorf("idle named %d times, want once as idle RTT 0.06 ms:\n%s", n, out)
	}
	if !strings.Contains(out, "\nL4S-ready: no, bottleneck not saturated (above)\n") {
		t.Errorf("last line:\n%s", out)
	}
	// The JSON's why, read alone, keeps the figures.
	if w := r.Why(); !strings.Contains(w, notSatDetail) {
		t.Errorf("Why() = %q: want the detail", w)
	}
}
