package testbed

import (
	"regexp"
	"strings"
	"testing"

	"github.com/pi2hop/pi2hop/testbed/report"
)

func TestNotes(t *testing.T) {
	tests := []struct {
		cfg  Config
		want []string
	}{
		{Config{Scenario: "bdp", Quick: true}, []string{"100 Mbit/s give 8.55 Mbit/s", "TCP_WINDOW_CLAMP", "first 1s"}},
		{Config{Scenario: "l4s-demo"}, []string{"100 packets tail drop (≈ 150 KB of 1500-byte packets, 120 ms", "4 kernel TCP cubic", "min_qlen_step 1"}},
		{Config{Scenario: "coexist"}, []string{"Jain's index"}},
	}
	for _, tt := range tests {
		c, err := tt.cfg.Resolve()
		if err != nil {
			t.Fatal(err)
		}
		all := strings.Join(notes(c), "\n")
		for _, w := range tt.want {
			if !strings.Contains(all, w) {
				t.Errorf("%s notes lack %q:\n%s", c.Scenario, w, all)
			}
		}
	}
}

// TestNotesCitePublicSources: what a report says about its figures cites
// sources a reader can look up, never the project's internal notes.
func TestNotesCitePublicSources(t *testing.T) {
	internal := regexp.MustCompile(`seed[ -]?0\d\d|issue \d|(l4s-endpoints|dualpi2|peers|go-stack|ecn-validation)\.md`)
	for _, name := range ScenarioNames() {
		c, err := Config{Scenario: name}.Resolve()
		if err != nil {
			t.Fatal(err)
		}
		texts := notes(c)
		texts = append(texts, appleComparison(&report.Report{}).Notes...)
		for _, s := range texts {
			if m := internal.FindString(s); m != "" {
				t.Errorf("%s: a note cites %q: %s", name, m, s)
			}
		}
	}
	all := strings.Join(append(notes(Config{Scenario: "bdp"}.mustResolve(t)), appleComparison(&report.Report{}).Notes...), "\n")
	for _, want := range []string{"WWDC23 session \"Reduce network delays with L4S\"", "Cisco's technical note"} {
		if !strings.Contains(all, want) {
			t.Errorf("notes lack %q", want)
		}
	}
}

func (c Config) mustResolve(t *testing.T) Config {
	t.Helper()
	r, err := c.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	return r
}
