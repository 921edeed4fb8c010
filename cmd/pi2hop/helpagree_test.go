package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/pi2hop/pi2hop/testbed"
)

// help lab, lab --list and the run agree on each scenario's --quick
// duration and on the default one: all three read testbed's defaults.
func TestLabDurationsAgree(t *testing.T) {
	help, _, err := runOut("help", "lab")
	if err != nil {
		t.Fatal(err)
	}
	list, _, err := runOut("lab", "--list")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range testbed.ScenarioNames() {
		q, err := testbed.Config{Scenario: name, Quick: true}.Resolve()
		if err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf("%s %g s", name, q.Duration.Seconds()); !strings.Contains(help, want) {
			t.Errorf("help lab --quick does not say %q (the run uses %v)", want, q.Duration)
		}
		if want := fmt.Sprintf("--quick:  %s: ", name); !strings.Contains(list, want) || !strings.Contains(list, fmt.Sprintf("%v per run", q.Duration)) {
			t.Errorf("lab --list: no %q with %v per run", want, q.Duration)
		}
	}
	def, _ := testbed.Config{}.Resolve()
	for _, want := range []string{
		fmt.Sprintf("(default %v for %s;", def.Duration, testbed.DefaultScenario),
		fmt.Sprintf("(default %v for %s)", def.Warmup, testbed.DefaultScenario),
		fmt.Sprintf("added each way (default %v;", def.RTT),
		fmt.Sprintf("beside the call (default %d)", def.Bulk),
		fmt.Sprintf("buffer in packets (default %d)", def.FIFOLimit),
		fmt.Sprintf("randomness (default %d)", def.Seed),
	} {
		if !strings.Contains(help, want) {
			t.Errorf("help lab does not say %q", want)
		}
	}
}

// help check lists --every, the probes' pace, among check's own flags,
// not under "Output flags".
func TestHelpCheckEvery(t *testing.T) {
	help, _, err := runOut("help", "check")
	if err != nil {
		t.Fatal(err)
	}
	every, output := strings.Index(help, "--every"), strings.Index(help, "Output flags:")
	if every < 0 || output < 0 || every > output {
		t.Errorf("--every at %d, Output flags at %d: want --every among check's own flags:\n%s", every, output, help)
	}
}

// A bare number for stats' polling period is refused in words about a
// period, not about tc's microseconds.
func TestStatsEveryBareNumber(t *testing.T) {
	_, _, err := runOut("stats", "--every", "1")
	if err == nil || !strings.Contains(err.Error(), `--every "1": give a unit, e.g. 1s`) || strings.Contains(err.Error(), "tc") {
		t.Errorf("stats --every 1: %v", err)
	}
}
