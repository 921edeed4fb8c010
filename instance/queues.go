package instance

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

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
