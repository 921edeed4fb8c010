package testbed

import (
	"fmt"
	"strings"
)

// QuickWords says what --quick runs, scenario by scenario, from the same
// defaults Resolve applies, for lab's help: "l4s-demo 20 s runs, aqm-zoo
// 10 s, bdp 5 s at 100 Mbit/s, ...". A scenario's rate is named where
// --quick changes it.
func QuickWords() string {
	var parts []string
	for i, name := range ScenarioNames() {
		def, _ := Config{Scenario: name}.Resolve()
		q, _ := Config{Scenario: name, Quick: true}.Resolve()
		w := fmt.Sprintf("%s %g s", name, q.Duration.Seconds())
		if i == 0 {
			w += " runs"
		}
		if q.RateBps != def.RateBps {
			w += " at " + fmtRate(float64(q.RateBps))
		}
		parts = append(parts, w)
	}
	return strings.Join(parts, ", ")
}

// DefaultRun is the default scenario's configuration without --quick, as
// Resolve sets it: the defaults lab's help gives.
func DefaultRun() Config {
	c, _ := Config{Scenario: DefaultScenario}.Resolve()
	return c
}
