package shaper

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Step is one change of a rate schedule.
type Step struct {
	At            int64  // ns since the schedule's time 0
	BitsPerSecond uint64 // rate from At until the next step; 0 sends nothing
}

// Schedule is a piecewise-constant rate: each step's rate holds until the
// next step, the last one forever. A packet's transmission integrates the
// rate exactly across steps (a zero rate pauses it), with one ceil at the
// end, so a single-step schedule times packets exactly as Const does.
type Schedule struct {
	steps []Step
}

// NewSchedule checks steps (the first at 0, times strictly increasing) and
// returns the schedule. It keeps its own copy.
func NewSchedule(steps []Step) (*Schedule, error) {
	if len(steps) == 0 {
		return nil, fmt.Errorf("rate schedule: no steps")
	}
	if steps[0].At != 0 {
		return nil, fmt.Errorf("rate schedule: the first step must be at time 0, not %v", time.Duration(steps[0].At))
	}
	for i := 1; i < len(steps); i++ {
		if steps[i].At <= steps[i-1].At {
			return nil, fmt.Errorf("rate schedule: step %d at %v is not after step %d at %v (times must increase)",
				i+1, time.Duration(steps[i].At), i, time.Duration(steps[i-1].At))
		}
	}
	return &Schedule{steps: append([]Step(nil), steps...)}, nil
}

// Finish implements Rate. Times before 0 use the first step's rate.
func (s *Schedule) Finish(start int64, n int) int64 {
	if n <= 0 {
		return start
	}
	const perByte = uint64(8e9) // bit·ns per second per byte
	if uint64(n) > math.MaxUint64/perByte {
		return Never // no IP packet is this long
	}
	// need counts bit·ns per second: a segment of d ns at r bit/s supplies d·r.
	need := uint64(n) * perByte
	i := sort.Search(len(s.steps), func(i int) bool { return s.steps[i].At > start }) - 1
	i = max(i, 0)
	t := start
	for ; ; i++ {
		r := s.steps[i].BitsPerSecond
		end := int64(Never)
		if i+1 < len(s.steps) {
			end = s.steps[i+1].At
		}
		if r > 0 {
			d := need / r
			if need%r != 0 {
				d++
			}
			if end == Never || d <= uint64(end-t) {
				return addSat(t, int64(min(d, math.MaxInt64)))
			}
			// end-t < d = ceil(need/r), so (end-t)·r < need: no overflow.
			need -= uint64(end-t) * r
		} else if end == Never {
			return Never
		}
		t = end
	}
}

// String describes the schedule for logs.
func (s *Schedule) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "rate schedule:")
	for i, st := range s.steps {
		if i == 8 {
			fmt.Fprintf(&b, " ... (%d steps)", len(s.steps))
			break
		}
		fmt.Fprintf(&b, " %v %s", time.Duration(st.At), FormatRate(st.BitsPerSecond))
	}
	return b.String()
}

// ParseRateCSV reads a `time,rate` schedule, one step per line: time in
// seconds ("2.5") or as a duration ("500ms", "2s"), rate in tc units
// ("10mbit", "1.5gbit", "500kbps") or bare bits/s. An optional header line
// (first field starting with a letter, e.g. "time,rate") is skipped, as are
// blank lines and lines starting with '#'. The first row is at time 0 and
// times increase; the last rate holds forever. Errors give the line number
// and the expected form.
func ParseRateCSV(r io.Reader) (Rate, error) {
	var steps []Step
	prevLine := 0
	header := true // a header may only be the first significant line
	err := scanLines(r, func(line int, text string) error {
		fields := strings.Split(text, ",")
		first := strings.TrimSpace(fields[0])
		if header && first != "" && isLetter(first[0]) {
			header = false
			return nil
		}
		header = false
		if len(fields) != 2 {
			return fmt.Errorf("line %d: %d fields: want time,rate (e.g. 0,10mbit or 500ms,2mbit)", line, len(fields))
		}
		at, err := parseScheduleTime(first)
		if err != nil {
			return fmt.Errorf("line %d, column 1: %w", line, err)
		}
		bps, err := ParseRate(strings.TrimSpace(fields[1]))
		if err != nil {
			return fmt.Errorf("line %d, column 2: rate %w", line, err)
		}
		if len(steps) == 0 && at != 0 {
			return fmt.Errorf("line %d: the first row must be at time 0, not %v (the schedule needs a rate from the start)",
				line, time.Duration(at))
		}
		if n := len(steps); n > 0 && at <= steps[n-1].At {
			return fmt.Errorf("line %d: time %v is not after line %d's %v (times must increase)",
				line, time.Duration(at), prevLine, time.Duration(steps[n-1].At))
		}
		steps = append(steps, Step{At: at, BitsPerSecond: bps})
		prevLine = line
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(steps) == 0 {
		return nil, fmt.Errorf("no rows (want lines of time,rate, e.g. 0,10mbit)")
	}
	return NewSchedule(steps)
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// parseScheduleTime reads seconds ("1.5") or a Go duration ("1500ms").
func parseScheduleTime(s string) (int64, error) {
	bad := fmt.Errorf("time %q: want seconds (1.5) or a duration (500ms, 2s)", s)
	if s == "" {
		return 0, bad
	}
	if c := s[len(s)-1]; isLetter(c) {
		d, err := time.ParseDuration(s)
		if err != nil {
			return 0, bad
		}
		if d < 0 {
			return 0, fmt.Errorf("time %q: negative", s)
		}
		return int64(d), nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, bad
	}
	if f < 0 {
		return 0, fmt.Errorf("time %q: negative", s)
	}
	if f >= math.MaxInt64/1e9 {
		return 0, fmt.Errorf("time %q: too large", s)
	}
	return int64(math.Round(f * 1e9)), nil
}
