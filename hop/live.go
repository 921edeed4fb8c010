package hop

import (
	"fmt"
	"time"

	"github.com/pi2hop/pi2hop/shaper"
)

// LiveRange is what a running direction carries, whatever live edits
// came before: every rate up to MaxRate with every delay up to MaxDelay
// and a queue of up to MaxQueue packets. The packet buffers are allocated
// once, when the hop is built, and the range is fixed then too, so that
// an edit accepted once is accepted after any other: were the product of
// rate and delay checked instead, a slow rate would let a long delay in
// that a fast rate then could not carry, and the hop would be stranded.
// A hop built with explicit Slots (the user's own sizing) has no range.
type LiveRange struct {
	MaxRate  uint64        // bit/s; a link that is not one constant rate counts as UnlimitedLineRate
	MaxDelay time.Duration // one-way
	MaxQueue int           // the queue's limit, packets (aqm.Spec.Limit)
	sized    bool          // false: explicit Slots, nothing checked
}

// LiveRanges returns the ranges of a hop built from c, per direction (up,
// down): the rate is the one the delay line is sized for (the link's
// peak, or LineRate), the queue the limit built with, and the delay as
// long as the buffers left hold at that rate.
func (c Config) LiveRanges() [2]LiveRange {
	c = c.withDefaults()
	var r [2]LiveRange
	for i, d := range [2]DirConfig{c.Up, c.Down} {
		if c.Slots > 0 {
			continue
		}
		rate := c.lineRate(d)
		line := max(c.slots(d)-c.fixedSlots(d), 0) // full-size packets the delay line holds
		bits := float64(line) * float64(c.MTU) * 8
		// Whole microseconds, down: at MaxDelay the line never needs one
		// packet more than it has.
		delay := time.Duration(bits/float64(rate)*1e6) * time.Microsecond
		r[i] = LiveRange{MaxRate: rate, MaxDelay: delay, MaxQueue: d.Queue.Limit(), sized: true}
	}
	return r
}

// A RangeError is a live edit outside a direction's LiveRange.
type RangeError struct {
	What  string // "rate", "delay" or "queue": the part refused
	Value string // what it asked, as tc prints it
	Range LiveRange
}

func (e *RangeError) Error() string {
	return fmt.Sprintf("%s %s is beyond what this hop's buffers carry live: rates up to %s, delays up to %v, a queue of up to %d packets; restart the hop with the largest rate, delay and limit you mean to set",
		e.What, e.Value, shaper.FormatRate(e.Range.MaxRate), e.Range.MaxDelay, e.Range.MaxQueue)
}

// Check refuses next when it leaves the range.
func (r LiveRange) Check(next DirConfig) error {
	if !r.sized {
		return nil
	}
	switch rate := peakRate(next); {
	case rate > r.MaxRate:
		name := shaper.FormatRate(rate)
		if _, ok := next.Link.Rate.(shaper.Const); !ok {
			name = fmt.Sprint(next.Link.Rate) + " (sized as " + name + ")"
		}
		return &RangeError{"rate", name, r}
	case time.Duration(next.Link.Delay) > r.MaxDelay:
		return &RangeError{"delay", time.Duration(next.Link.Delay).String(), r}
	case next.Queue.Limit() > r.MaxQueue:
		return &RangeError{"queue", fmt.Sprintf("limit %dp", next.Queue.Limit()), r}
	}
	return nil
}

// CheckLive checks the directions of next against a hop built from c:
// each within its live range and within the buffers. It builds nothing,
// so a caller can ask before it edits; Reconfigure asks it of the
// configuration the hop was built with, after its own checks of what
// cannot change from the running one (a queue's kind).
func (c Config) CheckLive(next Config) error {
	c = c.withDefaults()
	ranges := c.LiveRanges()
	for i, d := range [2]DirConfig{next.Up, next.Down} {
		err := ranges[i].Check(d)
		if err == nil {
			err = c.fits(d, c.slots([2]DirConfig{c.Up, c.Down}[i]))
		}
		if err != nil {
			return fmt.Errorf("hop: %s: %w", Dir(i), err)
		}
	}
	return nil
}
