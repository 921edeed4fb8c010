package shaper

import (
	"fmt"
	"io"
	"strconv"
)

// A mahimahi trace (mm-link's format) lists delivery opportunities, one per
// line: an integer timestamp in ms at which the link may deliver 1500
// bytes. Repeated timestamps are several opportunities in the same ms. The
// trace loops with a period equal to its last timestamp, so loop k's
// opportunities are at k·period + t.
//
// Byte-credit model. mahimahi (LinkQueue::rationalize) serves queued
// packets FIFO from the opportunities' byte credit: a packet larger than
// the credit left spans opportunities, and the surplus of an opportunity
// goes to the next queued packet in the same instant; credit that finds
// the queue empty is lost. So leftover bytes DO carry over to the next
// packet while the link stays busy; a model without carry-over would give
// every 64-byte ACK a whole opportunity, cutting an ACK path's capacity up
// to 23-fold. We keep mahimahi's carry-over but make Finish a pure
// function of (start, n) by letting each millisecond's credit (1500 bytes
// per opportunity) flow at 1 byte/ns (8 Gbit/s) from the millisecond's
// start: a packet that starts while that burst lasts uses what is left of
// it, one that starts after it has ended finds it gone, as when mahimahi's
// queue was empty. Packets therefore finish within 1500·m ns (m = the
// millisecond's opportunity count) of mahimahi's instant, and a trace may
// hold at most maxOppsPerMs opportunities in one millisecond. One more
// difference: a packet reaching an idle link during a burst uses the rest
// of it, where mahimahi, whose clock ticks in ms, spends that
// millisecond's opportunities just before queueing the packet.
const (
	oppBytes     = 1500                    // bytes per delivery opportunity
	nsPerMs      = int64(1e6)              // ns per trace time unit
	maxOppsPerMs = int(nsPerMs / oppBytes) // bursts must end within their ms: 666
	maxPeriodMs  = 1 << 24                 // cum table bound: ~4.7 h of trace
)

// Trace is a looping mahimahi delivery-opportunity trace.
type Trace struct {
	times  []int64  // opportunity times in ms, non-decreasing; the last is the period
	cum    []uint32 // cum[r]: opportunities at ms <= r within one loop, r < period
	period int64    // ms
}

// ParseMahimahi reads a mahimahi trace: one integer ms timestamp per line,
// non-decreasing, the last one > 0. Blank lines and lines starting with
// '#' are skipped. Errors give the line number and the expected form.
func ParseMahimahi(r io.Reader) (Rate, error) {
	t := &Trace{}
	run, firstRun, lastLine := 0, 0, 0 // opportunities in the current ms, in ms 0; line of the last one
	err := scanLines(r, func(line int, text string) error {
		ms, err := strconv.ParseUint(text, 10, 63)
		if err != nil {
			return fmt.Errorf("line %d: %q: want a whole number of milliseconds", line, text)
		}
		if n := len(t.times); n > 0 && int64(ms) < t.times[n-1] {
			return fmt.Errorf("line %d: %d ms is before the previous line's %d ms (timestamps must not decrease)",
				line, ms, t.times[n-1])
		}
		if ms > maxPeriodMs {
			return fmt.Errorf("line %d: %d ms: traces longer than %d ms are not supported", line, ms, maxPeriodMs)
		}
		if n := len(t.times); n > 0 && int64(ms) == t.times[n-1] {
			run++
		} else {
			run = 1
		}
		if ms == 0 {
			firstRun = run
		}
		if run > maxOppsPerMs {
			return fmt.Errorf("line %d: more than %d opportunities at %d ms (8 Gbit/s) are not supported", line, maxOppsPerMs, ms)
		}
		t.times = append(t.times, int64(ms))
		lastLine = line
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(t.times) == 0 {
		return nil, fmt.Errorf("no timestamps (want one integer ms per line, e.g. 1, 1, 2, ...)")
	}
	if uint64(len(t.times)) >= 1<<32 {
		return nil, fmt.Errorf("too many opportunities (%d)", len(t.times))
	}
	t.period = t.times[len(t.times)-1]
	if t.period == 0 {
		return nil, fmt.Errorf("the last timestamp is 0 ms: a trace must last a non-zero time (its last timestamp is the loop period)")
	}
	// The last timestamp falls on the same instant as the next loop's 0 ms.
	if run+firstRun > maxOppsPerMs {
		return nil, fmt.Errorf("line %d: %d opportunities at %d ms plus %d at 0 ms meet when the trace loops: at most %d per ms (8 Gbit/s) are supported",
			lastLine, run, t.period, firstRun, maxOppsPerMs)
	}
	t.index()
	return t, nil
}

// index builds the cumulative count table.
func (t *Trace) index() {
	t.cum = make([]uint32, t.period)
	for _, ms := range t.times {
		if ms < t.period {
			t.cum[ms]++
		}
	}
	for r := int64(1); r < t.period; r++ {
		t.cum[r] += t.cum[r-1]
	}
}

// countBefore returns the number of opportunities before millisecond
// k·period + r since the trace's time 0, over all loops (0 <= r <= period).
func (t *Trace) countBefore(k, r int64) int64 {
	switch {
	case r > 0:
		return k*int64(len(t.times)) + int64(t.cum[r-1])
	case k > 0:
		return (k-1)*int64(len(t.times)) + int64(t.cum[t.period-1])
	}
	return 0
}

// Finish implements Rate with the byte-credit model above. Times before
// the trace's time 0 have no opportunities. Two divisions: it is on the
// per-packet path.
func (t *Trace) Finish(start int64, n int) int64 {
	if n <= 0 {
		return start
	}
	if start > 1<<62 { // ~146 years: keeps credit arithmetic in range
		return Never
	}
	s := max(start, 0)
	ms := s / nsPerMs
	opps := int64(len(t.times))
	k, r := ms/t.period, ms%t.period
	before := t.countBefore(k, r)
	upTo := k*opps + int64(t.cum[r]) // opportunities at or before ms
	// Credit (bytes) delivered up to s, counted from time 0.
	credit := oppBytes*before + min(oppBytes*(upTo-before), s-ms*nsPerMs)
	last := credit + int64(n)  // credit needed to send the packet's last byte
	j := (last - 1) / oppBytes // the opportunity that carries it
	k, i := j/opps, j%opps
	msLast := k*t.period + t.times[i]
	return msLast*nsPerMs + last - oppBytes*t.countBefore(k, t.times[i])
}

// String describes the trace for logs.
func (t *Trace) String() string {
	bps := uint64(len(t.times)) * oppBytes * 8 * 1000 / uint64(t.period)
	return fmt.Sprintf("mahimahi trace: %d opportunities per %d ms loop (mean %s)",
		len(t.times), t.period, FormatRate(bps))
}
