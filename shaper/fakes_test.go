package shaper

import (
	"fmt"
	"math"

	"github.com/pi2hop/pi2hop/aqm"
)

// fakeQueue is a small aqm.Queue for link tests: a FIFO ring (power-of-two
// size), optionally
// refusing at a packet limit, dropping every Nth dequeued packet, and
// running a periodic update whose count is reported as its probability.
type fakeQueue struct {
	buf       []aqm.Meta
	head, n   int
	bytes     int
	limit     int   // refuse when this many are queued (0 = unbounded)
	dropEvery int   // drop every Nth dequeued packet (0 = never)
	period    int64 // periodic update interval (0 = none)
	next      int64 // next update time
	updates   uint32
	deqs      int
	log       []string // operations with times, when logging
	logging   bool
}

var _ aqm.Queue = (*fakeQueue)(nil)

func newFakeQueue() *fakeQueue { return &fakeQueue{buf: make([]aqm.Meta, 64)} }

func (f *fakeQueue) logf(format string, a ...any) {
	if f.logging {
		f.log = append(f.log, fmt.Sprintf(format, a...))
	}
}

func (f *fakeQueue) Enqueue(m aqm.Meta, now int64) aqm.Verdict {
	if f.logging {
		f.logf("enq@%d", now)
	}
	if f.limit > 0 && f.n >= f.limit {
		return aqm.Verdict{Action: aqm.Drop, Reason: aqm.ReasonLimit}
	}
	if f.n == len(f.buf) {
		buf := make([]aqm.Meta, 2*len(f.buf))
		for i := range f.n {
			buf[i] = f.buf[(f.head+i)&(len(f.buf)-1)]
		}
		f.buf, f.head = buf, 0
	}
	m.Arrival, m.Class = now, aqm.Classic
	f.buf[(f.head+f.n)&(len(f.buf)-1)] = m
	f.n++
	f.bytes += int(m.Len)
	return aqm.Verdict{}
}

func (f *fakeQueue) Dequeue(now int64) (aqm.Meta, aqm.Verdict, bool) {
	if f.n == 0 {
		return aqm.Meta{}, aqm.Verdict{}, false
	}
	if f.logging {
		f.logf("deq@%d", now)
	}
	m := f.buf[f.head]
	f.head = (f.head + 1) & (len(f.buf) - 1)
	f.n--
	f.bytes -= int(m.Len)
	f.deqs++
	if f.dropEvery > 0 && f.deqs%f.dropEvery == 0 {
		return m, aqm.Verdict{Action: aqm.Drop, Reason: aqm.ReasonClassic}, true
	}
	if m.ECN == aqm.ECT0 {
		return m, aqm.Verdict{Action: aqm.Mark, Reason: aqm.ReasonClassic}, true
	}
	return m, aqm.Verdict{}, true
}

func (f *fakeQueue) Advance(now int64) {
	for f.period > 0 && f.next <= now {
		if f.logging {
			f.logf("adv@%d", f.next)
		}
		f.updates++
		f.next += f.period
	}
}

func (f *fakeQueue) NextUpdate() int64 {
	if f.period == 0 {
		return math.MaxInt64
	}
	return f.next
}

func (f *fakeQueue) Len() (int, int) { return f.n, f.bytes }

func (f *fakeQueue) Stats(now int64) aqm.Stats {
	return aqm.Stats{BacklogPkts: f.n, BacklogBytes: f.bytes}
}

// Prob reports the number of updates so far, so tests can see that an
// Event's Prob is read at its dequeue.
func (f *fakeQueue) Prob() uint32 { return f.updates }
