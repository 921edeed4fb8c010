package instance

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/internal/flagvalue"
	"github.com/pi2hop/pi2hop/shaper"
)

// Settings carry the link's own Jitter and Aggregate and the flag's
// Step: each is defined once, these are its names here.
type (
	Jitter    = shaper.Jitter
	Aggregate = shaper.Aggregate
	Step      = flagvalue.Step
)

// jitterFor and aggregateFor pick the most specific level given.
func (s Settings) jitterFor(dir string) *Jitter {
	return forDir(dir, s.UpJitter, s.DownJitter, s.Jitter)
}

func (s Settings) aggregateFor(dir string) *Aggregate {
	return forDir(dir, s.UpAggregate, s.DownAggregate, s.Aggregate)
}

// forDir is dir's own value (up or down) if given, else both's: the value
// dirKey names.
func forDir[T any](dir string, up, down, both *T) *T {
	switch {
	case dir == "up" && up != nil:
		return up
	case dir == "down" && down != nil:
		return down
	}
	return both
}

// dirKey names the key a direction's value came from.
func dirKey[T any](dir, key string, up, down *T) string {
	switch {
	case dir == "up" && up != nil:
		return "up-" + key
	case dir == "down" && down != nil:
		return "down-" + key
	}
	return key
}

// checkKindKeys refuses the queue knobs kind does not take (the table's
// Kinds): a knob given for a kind that does not take it is an error, not
// silently ignored.
func (s Settings) checkKindKeys(kind string) error {
	for _, k := range s.Given() {
		st, _ := Lookup(k)
		if st.Kinds == nil || slices.Contains(st.Kinds, kind) {
			continue
		}
		var takers []string
		for _, kk := range aqm.Kinds {
			if slices.Contains(st.Kinds, kk) {
				takers = append(takers, kk)
			}
		}
		return &FieldError{k, fmt.Errorf("configures %s and means nothing with aqm %s", strings.Join(takers, ", "), kind)}
	}
	return nil
}

// otherSpec builds codel, pie, fq_codel and docsis from their kernel (or
// DOCSIS) defaults and the knobs given.
func (s Settings) otherSpec(kind string) (aqm.Spec, error) {
	spec, _ := aqm.DefaultSpec(kind)
	dur := func(p *time.Duration, def int64) int64 { return int64(deref(p, time.Duration(def))) }
	ceThreshold := func(def int64) int64 {
		if s.CEThreshold == nil {
			return def
		}
		return int64(*s.CEThreshold)
	}
	switch kind {
	case aqm.KindCoDel:
		c := &spec.CoDel
		c.Limit = deref(s.Limit, c.Limit)
		c.Target, c.Interval = dur(s.Target, c.Target), dur(s.Interval, c.Interval)
		c.ECN = deref(s.ECN, c.ECN)
		c.CEThreshold = ceThreshold(c.CEThreshold)
	case aqm.KindPIE:
		c := &spec.PIE
		c.Limit = deref(s.Limit, c.Limit)
		c.Target, c.Tupdate = dur(s.Target, c.Target), dur(s.Tupdate, c.Tupdate)
		var err error
		if c.Alpha, err = pieGain("alpha", s.Alpha, c.Alpha); err != nil {
			return spec, err
		}
		if c.Beta, err = pieGain("beta", s.Beta, c.Beta); err != nil {
			return spec, err
		}
		c.ECN = deref(s.ECN, c.ECN)
		c.Bytemode = deref(s.Bytemode, c.Bytemode)
		c.DQRateEstimator = deref(s.DQRateEstimator, c.DQRateEstimator)
	case aqm.KindFQCodel:
		c := &spec.FQCodel
		c.Limit = deref(s.Limit, c.Limit)
		c.MemoryLimit = deref(s.MemLimit, c.MemoryLimit)
		c.Target, c.Interval = dur(s.Target, c.Target), dur(s.Interval, c.Interval)
		c.ECN = deref(s.ECN, c.ECN)
		c.CEThreshold = ceThreshold(c.CEThreshold)
		c.Flows = deref(s.Flows, c.Flows)
		c.Quantum = deref(s.Quantum, c.Quantum)
		c.DropBatch = deref(s.DropBatch, c.DropBatch)
		if s.CESelector != nil {
			v, m, err := ParseSelector(*s.CESelector)
			if err != nil {
				return spec, &FieldError{"ce-threshold-selector", err}
			}
			c.CESelector, c.CEMask = v, m
		}
	case aqm.KindDOCSIS:
		c := &spec.DOCSIS
		c.Classic = deref(s.DOCSISClassic, c.Classic)
		core := s
		if c.Classic == aqm.DOCSISClassicPIE {
			// alpha and beta are DOCSIS-PIE's A and B; the core's PI2 idles.
			c.PIE.Alpha, c.PIE.Beta = deref(s.Alpha, c.PIE.Alpha), deref(s.Beta, c.PIE.Beta)
			core.Alpha, core.Beta = nil, nil
		}
		var err error
		if c.DualPI2, err = core.dualPI2From(c.DualPI2); err != nil {
			return spec, err
		}
		c.NQB = deref(s.NQB, c.NQB)
		c.QProt.On = deref(s.QueueProtection, c.QProt.On)
		c.MaxTh = dur(s.MaxTh, c.MaxTh)
	}
	return spec, spec.Validate()
}

// pieGain converts a gain given in Hz·256 (the alpha/beta flags' unit) to
// PIE's sixteenths of Hz: 0.125 Hz = 32/256 = 2/16.
func pieGain(key string, hz256 *uint32, def uint32) (uint32, error) {
	if hz256 == nil {
		return def, nil
	}
	if *hz256%16 != 0 {
		return 0, &FieldError{key, fmt.Errorf("%g Hz: PIE takes %s in steps of 1/16 Hz (0.0625), 0..2 Hz", float64(*hz256)/256, key)}
	}
	return *hz256 / 16, nil
}

// ParseSelector reads tc's ce_threshold_selector VALUE/MASK (hex or
// decimal bytes), e.g. 0x01/0x01 for ECT(1).
func ParseSelector(s string) (value, mask uint8, err error) {
	v, m, ok := strings.Cut(s, "/")
	if !ok {
		return 0, 0, fmt.Errorf("%q: want VALUE/MASK, e.g. 0x01/0x01", s)
	}
	pv, err1 := strconv.ParseUint(v, 0, 8)
	pm, err2 := strconv.ParseUint(m, 0, 8)
	if err := errors.Join(err1, err2); err != nil {
		return 0, 0, fmt.Errorf("%q: want VALUE/MASK of bytes, e.g. 0x01/0x01", s)
	}
	return uint8(pv), uint8(pm), nil
}
