package aqm

import (
	"math/rand/v2"
	"testing"
)

const ms = int64(1_000_000)

// newTestQueue builds a queue with build from the defaults def changed by
// mod (if not nil), failing t if the result is refused.
func newTestQueue[C, Q any](t testing.TB, def C, mod func(*C), build func(C) (Q, error)) Q {
	t.Helper()
	if mod != nil {
		mod(&def)
	}
	q, err := build(def)
	if err != nil {
		t.Fatalf("%T: %v", def, err)
	}
	return q
}

// newTestDualPI2 returns a DualPI2 with the defaults changed by mod, on a
// fixed seed.
func newTestDualPI2(t testing.TB, mod func(*Config)) *DualPI2 {
	t.Helper()
	return newTestQueue(t, DefaultConfig(), mod, func(c Config) (*DualPI2, error) { return NewDualPI2(c, rand.New(rand.NewPCG(1, 0x5eed))) })
}

func pkt(e ECN, n int32) Meta { return Meta{ECN: e, Len: n} }

// mustEnqueue enqueues m at now and fails unless it was queued.
func mustEnqueue(t testing.TB, q Queue, m Meta, now int64) Verdict {
	t.Helper()
	v := q.Enqueue(m, now)
	if v.Action != Pass {
		t.Fatalf("Enqueue(%+v, %d) = %+v, want queued", m, now, v)
	}
	return v
}

// mustDequeue dequeues at now and fails if the queue was empty.
func mustDequeue(t testing.TB, q Queue, now int64) (Meta, Verdict) {
	t.Helper()
	m, v, ok := q.Dequeue(now)
	if !ok {
		t.Fatalf("Dequeue(%d): queue empty", now)
	}
	return m, v
}

// checkInvariants verifies everything that must hold between operations:
// the rings' counts and bytes agree with their contents and with Len and
// Stats, the limits hold, arrivals are in order, and p' is in range.
func checkInvariants(t testing.TB, q *DualPI2) {
	t.Helper()
	total := 0
	for name, r := range map[string]*ring{"C": &q.c, "L": &q.l} {
		if r.n < 0 || r.n > len(r.buf) || (len(r.buf)&(len(r.buf)-1)) != 0 {
			t.Fatalf("%s ring: n=%d cap=%d (cap must be a power of two >= n)", name, r.n, len(r.buf))
		}
		bytes := 0
		prev := int64(-1 << 62)
		for i := range r.n {
			m := r.buf[(r.head+i)&(len(r.buf)-1)]
			bytes += int(m.Len)
			if m.Arrival < prev {
				t.Fatalf("%s ring: arrival %d after %d: out of order", name, m.Arrival, prev)
			}
			prev = m.Arrival
			if (name == "C") != (m.Class == Classic) {
				t.Fatalf("%s ring holds a %v packet", name, m.Class)
			}
			if m.applyStep && m.Class != L4S {
				t.Fatalf("%s ring: applyStep on class %d", name, m.Class)
			}
		}
		if bytes != r.bytes {
			t.Fatalf("%s ring: bytes %d, contents sum to %d", name, r.bytes, bytes)
		}
		total += bytes
	}
	pkts, bytes := q.Len()
	if pkts != q.c.n+q.l.n || bytes != total {
		t.Fatalf("Len() = %d, %d; rings hold %d, %d", pkts, bytes, q.c.n+q.l.n, total)
	}
	if q.memory != uint64(total) {
		t.Fatalf("memory used %d, rings hold %d bytes", q.memory, total)
	}
	if pkts > int(q.cfg.Limit) || q.memory > q.cfg.MemLimit {
		t.Fatalf("over limit: %d packets (limit %d), %d bytes (memlimit %d)", pkts, q.cfg.Limit, q.memory, q.cfg.MemLimit)
	}
	s := q.Stats(0)
	if s.BacklogPkts != pkts || s.BacklogBytes != bytes || s.MemoryUsed != uint64(bytes) {
		t.Fatalf("Stats backlog %d/%d memory %d, want %d/%d", s.BacklogPkts, s.BacklogBytes, s.MemoryUsed, pkts, bytes)
	}
	if s.MaxMemoryUsed < s.MemoryUsed {
		t.Fatalf("max memory %d < memory %d", s.MaxMemoryUsed, s.MemoryUsed)
	}
	var byReason uint64
	for _, n := range s.DropsBy {
		byReason += n
	}
	if byReason != s.Dropped || s.C.Dropped+s.L.Dropped != s.Dropped {
		t.Fatalf("drops: total %d, by reason %d, by queue %d", s.Dropped, byReason, s.C.Dropped+s.L.Dropped)
	}
	if s.C.Sent+s.L.Sent != s.SentPackets || s.C.Bytes+s.L.Bytes != s.SentBytes {
		t.Fatalf("sent: total %d/%d, by queue %d/%d", s.SentPackets, s.SentBytes, s.C.Sent+s.L.Sent, s.C.Bytes+s.L.Bytes)
	}
	if !q.cfg.DropOverload && q.prob > MaxProb/uint32(q.cfg.Coupling) {
		t.Fatalf("overflow mode: p' %d above MaxProb/k = %d", q.prob, MaxProb/uint32(q.cfg.Coupling))
	}
	if q.credit < -maxWeight*int64(q.cfg.MTU)-maxWeight*65535 || q.credit > maxWeight*int64(q.cfg.MTU)+maxWeight*65535 {
		t.Fatalf("credit %d out of range", q.credit)
	}
}
