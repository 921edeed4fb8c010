package aqm

import (
	"errors"
	"math"
)

// FIFO is a tail-drop queue: the "no L4S queue management" baseline. Every
// packet is Classic, ECN is never touched, and a packet is refused when it
// would take the queue over its packet or byte limit.
type FIFO struct {
	cfg FIFOConfig
	q   ring
	st  Stats
}

var _ Queue = (*FIFO)(nil)

// NewFIFO returns an empty FIFO; at least one of the limits must be set.
func NewFIFO(cfg FIFOConfig) (*FIFO, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	f := &FIFO{cfg: cfg}
	f.q = newRing(f.prealloc())
	f.st.MemoryLimit = cfg.ByteLimit
	return f, nil
}

// Validate checks that the FIFO has a limit.
func (c FIFOConfig) Validate() error {
	if c.Limit == 0 && c.ByteLimit == 0 {
		return errors.New(`fifo config: need a packet limit or a byte limit (both are 0)`)
	}
	return nil
}

// prealloc is the ring size to reserve: the packet limit, or for a byte
// limit alone enough 40-byte packets (a bare TCP/IPv4 ACK) to fill it.
func (f *FIFO) prealloc() int {
	if f.cfg.Limit > 0 {
		return int(min(f.cfg.Limit, maxPrealloc))
	}
	return int(min(f.cfg.ByteLimit/40+1, maxPrealloc))
}

// Config returns the FIFO's limits.
func (f *FIFO) Config() FIFOConfig { return f.cfg }

// Enqueue queues m or refuses it at the limit (ReasonLimit).
func (f *FIFO) Enqueue(m Meta, now int64) Verdict {
	m.Len = max(m.Len, 0)
	m.Class = Classic
	m.applyStep, m.earlyMark = false, ReasonNone
	if (f.cfg.Limit > 0 && f.q.len() >= int(f.cfg.Limit)) ||
		(f.cfg.ByteLimit > 0 && uint64(f.q.bytes)+uint64(m.Len) > f.cfg.ByteLimit) {
		f.st.Overlimits++
		f.st.Dropped++
		f.st.DropsBy[ReasonLimit]++
		f.st.C.Dropped++
		return Verdict{Action: Drop, Reason: ReasonLimit, Class: Classic}
	}
	m.Arrival = now
	f.st.MaxQ = max(f.st.MaxQ, uint32(min(uint64(f.q.len()), math.MaxUint32)))
	f.q.push(m)
	f.st.PktsInC++
	f.st.C.Enqueued++
	f.st.MaxMemoryUsed = max(f.st.MaxMemoryUsed, uint64(f.q.bytes))
	return Verdict{Class: Classic}
}

// Dequeue returns the oldest packet, always with Action Pass.
func (f *FIFO) Dequeue(now int64) (Meta, Verdict, bool) {
	if f.q.len() == 0 {
		return Meta{}, Verdict{}, false
	}
	m := f.q.pop()
	f.st.SentPackets++
	f.st.SentBytes += uint64(m.Len)
	f.st.C.Sent++
	f.st.C.Bytes += uint64(m.Len)
	return m, Verdict{Class: Classic}, true
}

// Advance does nothing: a FIFO has no periodic work.
func (f *FIFO) Advance(now int64) {}

// NextUpdate returns math.MaxInt64: a FIFO has no periodic work.
func (f *FIFO) NextUpdate() int64 { return math.MaxInt64 }

// Len returns the packets and bytes queued.
func (f *FIFO) Len() (pkts, bytes int) { return f.q.len(), f.q.bytes }

// Stats returns the counters; DelayC is the head's sojourn at now.
func (f *FIFO) Stats(now int64) Stats {
	s := f.st
	s.Kind = KindFIFO
	if f.q.len() > 0 {
		s.DelayC = max(now-f.q.front().Arrival, 0)
	}
	s.MemoryUsed = uint64(f.q.bytes)
	s.BacklogPkts, s.BacklogBytes = f.q.len(), f.q.bytes
	return s
}
