package aqm

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

func TestDefaultConfig(t *testing.T) {
	c := DefaultConfig()
	want := Config{
		Limit: 10000, MemLimit: 30_000_000, Target: 15 * ms, Tupdate: 16 * ms,
		Alpha: 41, Beta: 819, Coupling: 2, StepThresh: 1 * ms, MinQlenStep: 0,
		DropOverload: true, DropEnqueue: false, ClassicProtection: 10, ECNMask: 1, MTU: 1500,
	}
	if c != want {
		t.Errorf("DefaultConfig() = %+v\nwant %+v", c, want)
	}
	if err := c.Validate(); err != nil {
		t.Errorf("defaults invalid: %v", err)
	}
	if got := DefaultMemLimit(math.MaxUint32, 1500); got != math.MaxUint32 {
		t.Errorf("DefaultMemLimit saturates at 2^32-1, got %d", got)
	}
}

// The kernel's netlink policy (dualpi2_policy) and dualpi2_change's
// cross-checks: both step_thresh forms, or a zero alpha, coupling or
// ecn_mask, are refused.
func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		mod  func(*Config)
		err  string // "" = valid
	}{
		{"coupling 0", func(c *Config) { c.Coupling = 0 }, `config "coupling": 0 not in 1..255`},
		{"coupling 1", func(c *Config) { c.Coupling = 1 }, ""},
		{"classic_protection 101", func(c *Config) { c.ClassicProtection = 101 }, `config "classic_protection": 101 not in 0..100`},
		{"classic_protection 0", func(c *Config) { c.ClassicProtection = 0 }, ""},
		{"classic_protection 100", func(c *Config) { c.ClassicProtection = 100 }, ""},
		{"ecn_mask 0", func(c *Config) { c.ECNMask = 0 }, `config "ecn_mask": 0 not in 1..3`},
		{"ecn_mask 4", func(c *Config) { c.ECNMask = 4 }, `config "ecn_mask": 4 not in 1..3`},
		{"ecn_mask 3", func(c *Config) { c.ECNMask = 3 }, ""},
		{"alpha 0", func(c *Config) { c.Alpha = 0 }, `config "alpha": 0 not in 1..2147483647`},
		{"beta 2^31", func(c *Config) { c.Beta = 1 << 31 }, `config "beta": 2147483648 not in 1..2147483647`},
		{"beta 2^31-1", func(c *Config) { c.Beta = 1<<31 - 1 }, ""},
		{"tupdate 999ns", func(c *Config) { c.Tupdate = 999 }, `config "tupdate": 999ns not in 1µs..4.294967295s`},
		{"tupdate 1µs", func(c *Config) { c.Tupdate = 1000 }, ""},
		{"tupdate 5s", func(c *Config) { c.Tupdate = 5e9 }, `config "tupdate": 5s not in 1µs..4.294967295s`},
		{"limit 0", func(c *Config) { c.Limit = 0 }, `config "limit": 0 not in 1..4294967295`},
		{"memlimit 0", func(c *Config) { c.MemLimit = 0 }, `config "memlimit": 0 not in 1..4294967295`},
		{"memlimit 2^32", func(c *Config) { c.MemLimit = 1 << 32 }, `config "memlimit"`},
		{"target -1", func(c *Config) { c.Target = -1 }, `config "target": -1ns not in`},
		{"target 0", func(c *Config) { c.Target = 0 }, ""},
		{"step 5s", func(c *Config) { c.StepThresh = 5e9 }, `config "step_thresh": 5s not in 0s..4.294967295s`},
		{"step 0", func(c *Config) { c.StepThresh = 0 }, ""},
		{"step packets 2^32", func(c *Config) { c.StepInPackets = true; c.StepThresh = 1 << 32 }, `config "step_thresh": 4294967296 not in 0..4294967295 packets`},
		{"step 3 packets", func(c *Config) { c.StepInPackets = true; c.StepThresh = 3 }, ""},
		{"mtu 0", func(c *Config) { c.MTU = 0 }, `config "mtu": 0 not in 68..65535`},
		{"mtu 9000", func(c *Config) { c.MTU = 9000 }, ""},
	}
	for _, tt := range tests {
		c := DefaultConfig()
		tt.mod(&c)
		err := c.Validate()
		switch {
		case tt.err == "" && err != nil:
			t.Errorf("%s: unexpected error %v", tt.name, err)
		case tt.err != "" && (err == nil || !strings.HasPrefix(err.Error(), tt.err)):
			t.Errorf("%s: error %v, want %q", tt.name, err, tt.err)
		}
		_, nerr := NewDualPI2(c, rand.New(rand.NewPCG(1, 2)))
		if (nerr == nil) != (err == nil) {
			t.Errorf("%s: NewDualPI2 error %v disagrees with Validate %v", tt.name, nerr, err)
		}
	}
	if _, err := NewDualPI2(DefaultConfig(), nil); err == nil {
		t.Error("NewDualPI2 accepted a nil random source")
	}
}

// tc's auto-tuning (tc-dualpi2's max_rtt and typical_rtt), checked against tc's printed values
// through the kernel's lossy round trip.
func TestTune(t *testing.T) {
	tests := []struct {
		maxRTT, typRTT        time.Duration
		target, tupdate       time.Duration
		alpha, beta           uint32
		shownAlpha, shownBeta string
	}{
		{300 * time.Millisecond, 0, 50 * time.Millisecond, 50 * time.Millisecond, 14, 256, "0.050781", "0.996094"},
		{200 * time.Millisecond, 20 * time.Millisecond, 20 * time.Millisecond, 20 * time.Millisecond, 12, 384, "0.042969", "1.496094"},
		// RFC 9332 Appendix A.1's example: max 100 ms, typical 15 ms ⇒ alpha 38, beta 768.
		{100 * time.Millisecond, 15 * time.Millisecond, 15 * time.Millisecond, 15 * time.Millisecond, 38, 768, "", ""},
		// typical only: max_rtt = 6·typical, tupdate = min(typical, max/3).
		{0, 10 * time.Millisecond, 10 * time.Millisecond, 10 * time.Millisecond, 71, 1280, "", ""},
		// max/3 below typical: tupdate = max/3.
		{30 * time.Millisecond, 20 * time.Millisecond, 20 * time.Millisecond, 10 * time.Millisecond, 284, 2560, "", ""},
	}
	for _, tt := range tests {
		target, tupdate, alpha, beta, err := Tune(int64(tt.maxRTT), int64(tt.typRTT))
		if err != nil {
			t.Errorf("Tune(%v, %v): %v", tt.maxRTT, tt.typRTT, err)
			continue
		}
		if time.Duration(target) != tt.target || time.Duration(tupdate) != tt.tupdate || alpha != tt.alpha || beta != tt.beta {
			t.Errorf("Tune(%v, %v) = %v %v %d %d, want %v %v %d %d", tt.maxRTT, tt.typRTT,
				time.Duration(target), time.Duration(tupdate), alpha, beta, tt.target, tt.tupdate, tt.alpha, tt.beta)
		}
		if tt.shownAlpha != "" {
			a := fmt.Sprintf("%f", GainHz(UnscaleGain(ScaleGain(alpha))))
			b := fmt.Sprintf("%f", GainHz(UnscaleGain(ScaleGain(beta))))
			if a != tt.shownAlpha || b != tt.shownBeta {
				t.Errorf("Tune(%v, %v): tc would show alpha %s beta %s, want %s %s", tt.maxRTT, tt.typRTT, a, b, tt.shownAlpha, tt.shownBeta)
			}
		}
	}
	errs := []struct {
		maxRTT, typRTT int64
		want           string
	}{
		{200 * ms, 300 * ms, "typical_rtt 300ms > max_rtt 200ms"},
		{0, 0, "give max_rtt or typical_rtt"},
		{-1, 0, "must not be negative"},
		{500, 0, "max_rtt 500ns: must be at least 1µs"},
		{100_000_000 * ms, 0, "alpha"}, // 100 000 s: alpha rounds to 0
	}
	for _, tt := range errs {
		_, _, _, _, err := Tune(tt.maxRTT, tt.typRTT)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Tune(%d, %d): error %v, want one containing %q", tt.maxRTT, tt.typRTT, err, tt.want)
		}
	}
}

// Validate's error carries the field and the range, so a caller can name
// its own flag without reading the message.
func TestValidateConfigError(t *testing.T) {
	tests := []struct {
		mod  func(*Config)
		want ConfigError
	}{
		{func(c *Config) { c.Coupling = 0 }, ConfigError{Field: "coupling", Value: 0, Min: 1, Max: 255}},
		{func(c *Config) { c.Tupdate = 999 }, ConfigError{Field: "tupdate", Value: 999, Min: 1000, Max: 1<<32 - 1, Unit: UnitNanos}},
		{func(c *Config) { c.StepInPackets = true; c.StepThresh = 1 << 32 },
			ConfigError{Field: "step_thresh", Value: 1 << 32, Min: 0, Max: 1<<32 - 1, Unit: UnitPackets}},
	}
	for _, tt := range tests {
		c := DefaultConfig()
		tt.mod(&c)
		var ce *ConfigError
		if err := c.Validate(); !errors.As(err, &ce) || *ce != tt.want {
			t.Errorf("Validate() = %#v, want %#v", err, tt.want)
		}
	}
}

// Range is Error without the field, in each unit.
func TestConfigErrorRange(t *testing.T) {
	tests := []struct {
		e           ConfigError
		rng, errStr string
	}{
		{ConfigError{Field: "coupling", Value: 0, Min: 1, Max: 255}, "0 not in 1..255", `config "coupling": 0 not in 1..255`},
		{ConfigError{Field: "tupdate", Value: 10e9, Min: 1000, Max: 1<<32 - 1, Unit: UnitNanos},
			"10s not in 1µs..4.294967295s", `config "tupdate": 10s not in 1µs..4.294967295s`},
		{ConfigError{Field: "step_thresh", Value: 1 << 32, Max: 1<<32 - 1, Unit: UnitPackets},
			"4294967296 not in 0..4294967295 packets", `config "step_thresh": 4294967296 not in 0..4294967295 packets`},
	}
	for _, tt := range tests {
		if tt.e.Range() != tt.rng || tt.e.Error() != tt.errStr {
			t.Errorf("%s: Range %q, Error %q; want %q, %q", tt.e.Field, tt.e.Range(), tt.e.Error(), tt.rng, tt.errStr)
		}
	}
}
