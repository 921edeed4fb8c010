package flow

import (
	"fmt"
	"time"
)

// Defaults for zero config fields.
const (
	defaultMTU      = 1400 // udp_prague's default packet size
	defaultInterval = time.Second
	videoMTU        = 1200 // video packets stay at or below this
	defaultFPS      = 30
	defaultMinRate  = 300_000   // bit/s
	defaultMaxRate  = 8_000_000 // bit/s
	defaultKeyEvery = 2 * time.Second
	defaultPlayout  = 80 * time.Millisecond
	defaultBudget   = 15 * time.Millisecond
)

// classicMode reports whether ecn selects the classic A/B case; "" is L4S.
func classicMode(ecn string) (bool, error) {
	switch ecn {
	case "", ECNL4S:
		return false, nil
	case ECNClassic:
		return true, nil
	}
	return false, fmt.Errorf("ECN %q: want %q or %q", ecn, ECNL4S, ECNClassic)
}

func (c PragueConfig) withDefaults() (PragueConfig, bool, error) {
	classic, err := classicMode(c.ECN)
	if err != nil {
		return c, false, err
	}
	if c.MTU == 0 {
		c.MTU = defaultMTU
	}
	if c.MTU < 150 || c.MTU > 65507 {
		return c, false, fmt.Errorf("MTU %d: want 150..65507 bytes", c.MTU)
	}
	if c.MaxRate != 0 && c.MaxRate < 100_000 {
		return c, false, fmt.Errorf("max rate %d bit/s: want 0 (no limit) or at least 100 kbit/s", c.MaxRate)
	}
	if c.Duration < 0 {
		return c, false, fmt.Errorf("duration %v: must not be negative", c.Duration)
	}
	if c.Interval == 0 {
		c.Interval = defaultInterval
	}
	if c.Interval < time.Millisecond {
		return c, false, fmt.Errorf("interval %v: want at least 1ms", c.Interval)
	}
	if c.RFC8888Period, err = blockPeriod(c.RFC8888Period); err != nil {
		return c, false, err
	}
	return c, classic, nil
}

// blockPeriod checks a block feedback period, 0 taking the default.
func blockPeriod(d time.Duration) (time.Duration, error) {
	if d == 0 {
		return defaultBlockPeriod, nil
	}
	if d < time.Millisecond || d > 500*time.Millisecond {
		return d, fmt.Errorf("RFC 8888 feedback period %v: want 1ms..500ms", d)
	}
	return d, nil
}

// feedbackHold is what the controller must allow for the receiver holding
// feedback back: one block period, or nothing with per-packet ACKs.
func feedbackHold(block bool, period time.Duration) int64 {
	if !block {
		return 0
	}
	return period.Microseconds()
}

func (c PragueConfig) feedbackHold() int64 { return feedbackHold(c.RFC8888, c.RFC8888Period) }

func (c VideoConfig) withDefaults() (VideoConfig, bool, error) {
	classic, err := classicMode(c.ECN)
	if err != nil {
		return c, false, err
	}
	if c.FPS == 0 {
		c.FPS = defaultFPS
	}
	if c.FPS < 1 || c.FPS > 240 {
		return c, false, fmt.Errorf("FPS %d: want 1..240", c.FPS)
	}
	if c.MinRate == 0 {
		c.MinRate = defaultMinRate
	}
	if c.MaxRate == 0 {
		c.MaxRate = max(defaultMaxRate, c.MinRate)
	}
	if c.MinRate < 100_000 || c.MaxRate < c.MinRate {
		return c, false, fmt.Errorf("video rates %d..%d bit/s: want 100 kbit/s <= min <= max", c.MinRate, c.MaxRate)
	}
	if c.KeyframeEvery == 0 {
		c.KeyframeEvery = defaultKeyEvery
	}
	if c.Playout == 0 {
		c.Playout = defaultPlayout
	}
	if c.FrameBudget == 0 {
		c.FrameBudget = defaultBudget
	}
	if c.Interval == 0 {
		c.Interval = defaultInterval
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"keyframe interval", c.KeyframeEvery}, {"playout delay", c.Playout}, {"frame budget", c.FrameBudget}, {"interval", c.Interval}} {
		if d.v < time.Millisecond {
			return c, false, fmt.Errorf("%s %v: want at least 1ms", d.name, d.v)
		}
	}
	if c.Duration < 0 {
		return c, false, fmt.Errorf("duration %v: must not be negative", c.Duration)
	}
	if c.RFC8888Period, err = blockPeriod(c.RFC8888Period); err != nil {
		return c, false, err
	}
	return c, classic, nil
}
