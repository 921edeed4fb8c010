package flagvalue

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// tcTimeUnits are tc(8)'s spellings of time units that Go's
// time.ParseDuration does not read, as Go's; "s", "ms" and "us" are
// both's. Longest first, so "msec" is not read as "m" + "sec".
var tcTimeUnits = []struct{ tc, goUnit string }{
	{"msecs", "ms"}, {"usecs", "us"}, {"msec", "ms"}, {"usec", "us"}, {"secs", "s"}, {"sec", "s"},
}

// ErrBareTime is a time given without a unit: tc(8) would read it as
// microseconds, which nobody typing 10 for a delay means, so it is
// refused rather than guessed. Its text speaks of tc, as the link's and
// queue's times are tc's; BareTimeHint says it for any other time.
var ErrBareTime = errors.New("give a unit, e.g. 10ms, 250us or 1.5s (tc would read a bare number as microseconds)")

// BareTimeHint is ErrBareTime's advice for a time that is not tc's (a
// polling period, a run's length).
const BareTimeHint = "give a unit, e.g. 1s, 500ms or 2m"

// ParseDuration reads a time as Go writes it (10ms, 1.5s, 1m30s) or as
// tc(8) does (10msec, 2sec, 250usec). A bare number is refused, except 0,
// which is zero in every unit.
func ParseDuration(s string) (time.Duration, error) {
	t := strings.TrimSpace(s)
	if _, err := strconv.ParseFloat(t, 64); err == nil {
		if f, _ := strconv.ParseFloat(t, 64); f == 0 {
			return 0, nil
		}
		return 0, ErrBareTime
	}
	for _, u := range tcTimeUnits {
		if num, ok := strings.CutSuffix(t, u.tc); ok {
			if _, err := strconv.ParseFloat(num, 64); err == nil {
				t = num + u.goUnit
				break
			}
		}
	}
	d, err := time.ParseDuration(t)
	if err != nil {
		return 0, errors.New("want a duration like 10ms, 250us or 1.5s (tc's 10msec, 250usec, 2sec too)")
	}
	return d, nil
}

// isBareNumber reports whether s is a number with no unit.
func isBareNumber(s string) bool {
	_, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	return err == nil
}

// Durations is a comma-separated list of times (15ms,50ms,120ms), each
// read as ParseDuration reads one.
type Durations struct{ D []time.Duration }

func (v *Durations) Set(s string) error {
	var out []time.Duration
	for _, f := range strings.Split(s, ",") {
		d, err := ParseDuration(f)
		if err != nil {
			return fmt.Errorf("%q: %w", f, err)
		}
		if d <= 0 {
			return fmt.Errorf("%q: must be more than 0", f)
		}
		out = append(out, d)
	}
	v.D = out
	return nil
}

func (v *Durations) String() string {
	s := make([]string, len(v.D))
	for i, d := range v.D {
		s[i] = d.String()
	}
	return strings.Join(s, ",")
}
func (v *Durations) Type() string { return "TIME,..." }

// Time is a time.Duration read as ParseDuration reads it: what a command
// declares in place of pflag's DurationVar, so every time flag takes the
// same forms. Its default is the variable's value when declared.
type Time time.Duration

func (v *Time) Set(s string) error {
	d, err := ParseDuration(s)
	if err != nil {
		return err
	}
	*v = Time(d)
	return nil
}

func (v *Time) String() string { return time.Duration(*v).String() }
func (v *Time) Type() string   { return "duration" }
