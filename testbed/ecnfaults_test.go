package testbed

import (
	"strings"
	"testing"

	"github.com/pi2hop/pi2hop/shaper"
)

// TestECNFaultRuns: --quick runs the four named in the scenario's text;
// the full scenario runs every kind, each with and without validation,
// and every run's fault is a spec the link takes.
func TestECNFaultRuns(t *testing.T) {
	names := func(runs []RunSpec) []string {
		var n []string
		for _, r := range runs {
			n = append(n, r.Name)
		}
		return n
	}
	quick, err := Config{Scenario: "ecn-faults", Quick: true}.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(names(quick.Runs()), " "), "bleach-val ce-bleach-after-noval ect1-to-ect0-val"; got != want {
		t.Errorf("--quick runs %s, want %s", got, want)
	}
	full, err := Config{Scenario: "ecn-faults"}.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	runs := full.Runs()
	if len(runs) != 24 {
		t.Fatalf("%d runs, want 24 (12 fault settings, with and without validation): %v", len(runs), names(runs))
	}
	kinds := map[string]bool{}
	for _, r := range runs {
		f, err := shaper.ParseFault(r.ECNFault)
		if err != nil {
			t.Errorf("%s: fault %q: %v", r.Name, r.ECNFault, err)
		}
		kinds[f.Kind.String()] = true
		call := r.Flows[0]
		if call.Kind != KindVideo || call.NoECNValidation != strings.HasSuffix(r.Name, "-noval") || len(r.Flows) != 5 {
			t.Errorf("%s: flows %+v: want the call (validation as the name says) and four downloads", r.Name, r.Flows)
		}
	}
	for _, k := range shaper.FaultKinds() {
		if !kinds[k] {
			t.Errorf("no run with fault kind %s", k)
		}
	}
}
