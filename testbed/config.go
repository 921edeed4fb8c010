package testbed

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Config is every knob of a lab, as flags can override it. Zero fields are
// filled from the scenario's defaults by Resolve; report.json records the
// resolved Config, so a report names exactly what ran.
type Config struct {
	Scenario string `json:"scenario"`
	Quick    bool   `json:"quick"` // short durations (CI): see each scenario

	RateBps  uint64        `json:"rate_bps"` // bottleneck rate, both directions
	RTT      time.Duration `json:"-"`        // base RTT: RTT/2 one-way delay each direction
	Duration time.Duration `json:"-"`        // traffic time of each run, warm-up included
	Warmup   time.Duration `json:"-"`        // left out of every figure (the scenario's warm-up)
	Seed     uint64        `json:"seed"`     // AQM randomness and video frame sizes
	// Repeat runs each run this many times, interleaved (all runs once,
	// then again); the report gives medians and ranges. 0 means 1.
	Repeat int `json:"repeat"`
	// MinQlenStep is DualPI2's min_qlen_step; nil = DefaultMinQlenStep.
	MinQlenStep *uint32 `json:"min_qlen_step"`
	// ECNFault is an ECN path fault (shaper.ParseFault) on both
	// directions of every run; "" = none.
	ECNFault string `json:"ecn_fault,omitempty"`

	// l4s-demo
	Bulk      int    `json:"bulk"`       // classic bulk downloads beside the call
	FIFOLimit uint32 `json:"fifo_limit"` // tail-drop buffer of the FIFO run, packets

	// bdp
	RTTs    []time.Duration `json:"-"`                 // one run per RTT and window
	Windows []uint64        `json:"windows,omitempty"` // receiver windows, bytes

	// prague: one run per bottleneck rate (bit/s); a rate given with
	// RateBps makes it the only one.
	Rates []uint64 `json:"rates_bps,omitempty"`
}

// MarshalJSON writes durations the way flags take them ("20ms"), so
// report.json reads like the command line.
func (c Config) MarshalJSON() ([]byte, error) {
	type plain Config // no methods: no recursion
	rtts := make([]string, len(c.RTTs))
	for i, r := range c.RTTs {
		rtts[i] = r.String()
	}
	return json.Marshal(struct {
		plain
		Rate     string   `json:"rate"`
		RTT      string   `json:"rtt"`
		Duration string   `json:"duration"`
		Warmup   string   `json:"warmup"`
		RTTs     []string `json:"rtts,omitempty"`
	}{plain(c), fmtRate(float64(c.RateBps)), c.RTT.String(), c.Duration.String(), c.Warmup.String(), rtts})
}

// String is a one-line summary for logs and errors.
func (c Config) String() string {
	rtt := "RTT " + c.RTT.String()
	if len(c.RTTs) > 0 {
		rtts := make([]string, len(c.RTTs))
		for i, r := range c.RTTs {
			rtts[i] = r.String()
		}
		ws := make([]string, len(c.Windows))
		for i, w := range c.Windows {
			ws[i] = fmt.Sprint(w)
		}
		rtt = fmt.Sprintf("RTTs %s, windows %s B", strings.Join(rtts, " "), strings.Join(ws, " "))
	}
	rate := fmtRate(float64(c.RateBps))
	if len(c.Rates) > 1 {
		rs := make([]string, len(c.Rates))
		for i, r := range c.Rates {
			rs[i] = fmtRate(float64(r))
		}
		rate = strings.Join(rs, " and ")
	}
	return fmt.Sprintf("%s: %s, %s, %v per run (warm-up %v)", c.Scenario, rate, rtt, c.Duration, c.Warmup)
}

func fmtRate(bps float64) string {
	switch {
	case bps >= 1e9:
		return fmt.Sprintf("%g Gbit/s", bps/1e9)
	case bps >= 1e6:
		return fmt.Sprintf("%g Mbit/s", bps/1e6)
	}
	return fmt.Sprintf("%g kbit/s", bps/1e3)
}

// Resolve fills c's zero fields from its scenario's defaults (the quick
// ones when c.Quick) and checks the result.
func (c Config) Resolve() (Config, error) {
	if c.Scenario == "" {
		c.Scenario = DefaultScenario
	}
	s, ok := scenarios[c.Scenario]
	if !ok {
		return c, fmt.Errorf("scenario %q: want one of %s", c.Scenario, strings.Join(ScenarioNames(), ", "))
	}
	d := s.defaults
	if c.Quick {
		d = s.quick
	}
	if len(c.Rates) == 0 && len(d.Rates) > 0 {
		c.Rates = d.Rates
		if c.RateBps != 0 {
			c.Rates = []uint64{c.RateBps}
		}
	}
	if c.RateBps == 0 {
		c.RateBps = d.RateBps
	}
	if c.RTT == 0 {
		c.RTT = d.RTT
	}
	if c.Duration == 0 {
		c.Duration = d.Duration
	}
	if c.Warmup == 0 {
		c.Warmup = d.Warmup
	}
	if c.Seed == 0 {
		c.Seed = d.Seed
	}
	if c.Repeat == 0 {
		c.Repeat = 1
	}
	if c.Repeat < 1 || c.Repeat > maxRepeat {
		return c, fmt.Errorf("repeat %d: want 1..%d", c.Repeat, maxRepeat)
	}
	if c.MinQlenStep == nil {
		c.MinQlenStep = d.MinQlenStep // a scenario's own, if it has one
	}
	if c.MinQlenStep == nil {
		m := uint32(DefaultMinQlenStep)
		c.MinQlenStep = &m
	}
	if c.Bulk == 0 {
		c.Bulk = d.Bulk
	}
	if c.FIFOLimit == 0 {
		c.FIFOLimit = d.FIFOLimit
	}
	if len(c.RTTs) == 0 {
		c.RTTs = d.RTTs
	}
	if len(c.Windows) == 0 {
		c.Windows = d.Windows
	}
	return c, c.validate()
}

func (c Config) validate() error {
	switch {
	case c.RateBps < 100_000:
		return fmt.Errorf("rate %d bit/s: want at least 100kbit", c.RateBps)
	case c.RTT < 0 || c.RTT > 2*time.Second:
		return fmt.Errorf("rtt %v: want 0..2s", c.RTT)
	case c.Duration < time.Second:
		return fmt.Errorf("duration %v: want at least 1s", c.Duration)
	case c.Warmup < 0 || c.Warmup >= c.Duration:
		return fmt.Errorf("warm-up %v: want 0 <= warm-up < duration (%v)", c.Warmup, c.Duration)
	case c.Bulk < 0 || c.Bulk > 32:
		return fmt.Errorf("bulk %d: want 0..32 flows", c.Bulk)
	}
	for _, r := range c.RTTs {
		if r <= 0 || r > 2*time.Second {
			return fmt.Errorf("rtts %v: each must be in (0, 2s]", r)
		}
	}
	for _, w := range c.Windows {
		if w < 2048 || w > 1<<30 {
			return fmt.Errorf("window %d bytes: want 2048..1073741824", w)
		}
	}
	return nil
}

// maxRepeat bounds Config.Repeat: a default lab takes ~3 minutes a time.
const maxRepeat = 20
