// Package shaper is pi2hop's link model: a queue discipline (aqm.Queue)
// drained by a link that sends one packet at a time at a rate (constant or
// a schedule), then a FIFO delay line and a loss model. Like aqm it never
// reads a clock: every call takes now (int64 ns), so the same code runs
// behind TUN devices and in virtual time.
package shaper

import (
	"math"
	"math/bits"
	"slices"
)

// Never is the time of something that will not happen: a packet that a
// zero rate never finishes, or no pending work (Link.Next).
const Never = math.MaxInt64

// Rate is the link's serialisation speed.
type Rate interface {
	// Finish returns when a packet of n bytes whose transmission starts at
	// start has completely left the link (absolute ns, >= start), or Never
	// if the rate is zero from start on. Finish is a pure function of its
	// arguments: calling it has no effect on later calls.
	Finish(start int64, n int) int64
}

// SameRate reports whether a and b are the same rate: equal constant
// rates, both unlimited, or traces and schedules with the same steps,
// whether or not they are one value (a trace file read twice is one rate).
// Every Rate of this package is comparable; so must others be.
func SameRate(a, b Rate) bool {
	switch a := a.(type) {
	case *Trace:
		b, ok := b.(*Trace)
		return ok && (a == b || a != nil && b != nil &&
			a.period == b.period && slices.Equal(a.times, b.times) && slices.Equal(a.cum, b.cum))
	case *Schedule:
		b, ok := b.(*Schedule)
		return ok && (a == b || a != nil && b != nil && slices.Equal(a.steps, b.steps))
	}
	return a == b
}

// Const is a constant rate in bits per second; zero sends nothing.
type Const struct{ BitsPerSecond uint64 }

// Finish returns start + ceil(8·n·1e9 / bps): the link model's rounding,
// so every implementation agrees to the nanosecond. The product is taken
// in 128 bits, so no packet size or rate overflows; a result past the end
// of int64 time is Never.
func (c Const) Finish(start int64, n int) int64 {
	if n <= 0 {
		return start
	}
	if c.BitsPerSecond == 0 {
		return Never
	}
	d := ceilDiv(uint64(n)*8, 1e9, c.BitsPerSecond)
	return addSat(start, d)
}

// String prints the rate in tc units, as --rate takes it.
func (c Const) String() string { return FormatRate(c.BitsPerSecond) }

// ceilDiv returns ceil(a·b/d), saturated to Never.
func ceilDiv(a, b, d uint64) int64 {
	hi, lo := bits.Mul64(a, b)
	if hi >= d {
		return Never // quotient does not fit 64 bits
	}
	q, r := bits.Div64(hi, lo, d)
	if r != 0 {
		q++
	}
	if q > math.MaxInt64 {
		return Never
	}
	return int64(q)
}

// addSat returns t + d for d >= 0, saturated to Never.
func addSat(t, d int64) int64 {
	if t == Never || t > 0 && d >= Never-t {
		return Never
	}
	return t + d
}
