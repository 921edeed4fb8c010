package aqm

import (
	"testing"
)

func newTestFQCodel(t testing.TB, mod func(*FQCodelConfig)) *FQCodel {
	t.Helper()
	return newTestQueue(t, DefaultFQCodelConfig(), mod, func(c FQCodelConfig) (*FQCodel, error) { return NewFQCodel(c) })
}

// Hashes of two flows in different buckets: hash·1024 >> 32 = 64 and 512.
const (
	flowBulk   = 0x1000_0000
	flowSparse = 0x8000_0000
)

func flowPkt(flow uint32, e ECN, n int32) Meta { return Meta{Flow: flow, ECN: e, Len: n} }

// simLink drains q at a fixed rate in virtual time, in steps of 10 µs:
// arrive adds the packets due at each step; when the link is free the
// next packet leaves the queue and occupies the link for len·8/rate.
func simLink(t *testing.T, q Queue, acc *accounting, bitsPerSec int64, end int64,
	arrive func(now int64), sent func(m Meta, v Verdict, now int64)) {
	t.Helper()
	const step = 10_000
	free := int64(0)
	for now := int64(0); now < end; now += step {
		for free <= now {
			if free >= q.NextUpdate() {
				q.Advance(free)
			}
			m, v, ok := acc.dequeue(q, free)
			if !ok {
				free = now + step
				break
			}
			if v.Action != Drop {
				sent(m, v, free)
				free += int64(m.Len) * 8 * 1e9 / bitsPerSec
			}
		}
		if now >= q.NextUpdate() {
			q.Advance(now)
		}
		arrive(now)
		acc.check(t, q, now)
	}
}

// RFC 8290 §1.2 / §4: a sparse flow's packet joins the new-flows list
// with a full quantum and is served at the next dequeue, so behind a bulk
// flow with 100 packets queued it waits at most for the bulk packet on
// the wire: 1514 B (one quantum) at 10 Mb/s is 1.2112 ms. The bulk flow
// (ECT(0), 120 ms of queue) is CE-marked by its own CoDel; the sparse
// flow, whose sojourn never reaches the 5 ms target, never is.
func TestFQCodelFlowIsolation(t *testing.T) {
	q := newTestFQCodel(t, nil)
	var acc accounting
	const rate = 10_000_000
	quantumTime := int64(DefaultPschedMTU) * 8 * 1e9 / rate
	nextSparse := int64(3_333_333)
	var sparseMax int64
	var sparseSent, bulkMarks, sparseMarks int
	bulkBucket, sparseBucket := q.FlowOf(flowBulk), q.FlowOf(flowSparse)
	if bulkBucket == sparseBucket {
		t.Fatal("test flows share a bucket")
	}
	simLink(t, q, &acc, rate, 2000*ms, func(now int64) {
		for q.backlogs[bulkBucket-1] < 100*1500 {
			acc.enqueue(t, q, flowPkt(flowBulk, ECT0, 1500), now)
		}
		if now >= nextSparse {
			acc.enqueue(t, q, flowPkt(flowSparse, ECT0, 200), now)
			nextSparse += 10 * ms
		}
	}, func(m Meta, v Verdict, now int64) {
		switch m.Flow {
		case flowSparse:
			if v.Sub != sparseBucket {
				t.Fatalf("sparse packet: flow number %d, want %d", v.Sub, sparseBucket)
			}
			sparseSent++
			sparseMax = max(sparseMax, now-m.Arrival)
			if v.Action == Mark {
				sparseMarks++
			}
		case flowBulk:
			if v.Action == Mark {
				if v.Reason != ReasonCodel || v.Sub != bulkBucket {
					t.Fatalf("bulk mark %+v", v)
				}
				bulkMarks++
			}
		}
	})
	t.Logf("sparse: %d packets, longest wait %d ns; bulk: %d marks", sparseSent, sparseMax, bulkMarks)
	if sparseSent < 190 {
		t.Fatalf("only %d sparse packets sent", sparseSent)
	}
	if sparseMax >= quantumTime {
		t.Errorf("sparse packet waited %v ns, want < one quantum at the link rate (%v ns)", sparseMax, quantumTime)
	}
	if sparseMarks != 0 || bulkMarks == 0 {
		t.Errorf("marks: sparse %d (want 0), bulk %d (want > 0)", sparseMarks, bulkMarks)
	}
	s := q.Stats(2000 * ms)
	if s.FQ.ECNMark != uint64(bulkMarks) || s.FQ.NewFlowCount < uint64(sparseSent) {
		t.Errorf("xstats %+v: ecn_mark want %d, new_flow_count >= %d", s.FQ, bulkMarks, sparseSent)
	}
}

// ce_threshold with ce_threshold_selector 0x01/0x01 (Linux's way to give
// L4S traffic a shallow threshold inside fq_codel): at a 2 ms sojourn
// over a 1 ms threshold, ECT(1) is marked, ECT(0) in another flow is not.
func TestFQCodelCEThresholdSelector(t *testing.T) {
	q := newTestFQCodel(t, func(c *FQCodelConfig) {
		c.CEThreshold, c.CESelector, c.CEMask = ms, 0x01, 0x01
	})
	for range 3 {
		mustEnqueue(t, q, flowPkt(flowBulk, ECT1, 1000), 0)
		mustEnqueue(t, q, flowPkt(flowSparse, ECT0, 1000), 0)
	}
	marked := map[ECN]int{}
	for range 6 {
		m, v := mustDequeue(t, q, 2*ms)
		if v.Action == Mark {
			if v.Reason != ReasonCEThreshold {
				t.Fatalf("mark reason %v", v.Reason)
			}
			marked[m.ECN]++
		}
	}
	if marked[ECT1] != 3 || marked[ECT0] != 0 {
		t.Errorf("marks by codepoint %v, want 3 ECT(1), 0 ECT(0)", marked)
	}
	if s := q.Stats(0); s.FQ.CEMark != 3 {
		t.Errorf("ce_mark %d, want 3", s.FQ.CEMark)
	}
}

// Over the limit, fq_codel_drop drops from the head of the fattest flow
// until half its backlog is gone, at most drop_batch packets: 90 packets
// of 1000 B (90000 B, threshold 45000) lose 45 when the 101st packet
// arrives at limit 100; with drop_batch 8 only 8. The drops come out of
// the next Dequeue calls (reason limit, the fat flow's number), and the
// fat flow's CoDel count rises by as many.
func TestFQCodelOverflowBatch(t *testing.T) {
	for _, tc := range []struct {
		batch uint32
		want  int
	}{{64, 45}, {8, 8}} {
		q := newTestFQCodel(t, func(c *FQCodelConfig) { c.Limit, c.DropBatch = 100, tc.batch })
		var acc accounting
		for range 90 {
			acc.enqueue(t, q, flowPkt(flowBulk, NotECT, 1000), 0)
		}
		for range 10 {
			acc.enqueue(t, q, flowPkt(flowSparse, NotECT, 1000), 0)
		}
		if v := acc.enqueue(t, q, flowPkt(flowSparse, NotECT, 1000), 0); v.Action != Pass {
			t.Fatalf("arriving packet %+v, want accepted (the fat flow pays)", v)
		}
		fat := q.FlowOf(flowBulk)
		if got := q.flows[fat-1].cv.count; got != uint32(tc.want) {
			t.Errorf("batch %d: fat flow's count %d, want %d", tc.batch, got, tc.want)
		}
		s := q.Stats(0)
		if s.FQ.DropOverlimit != uint64(tc.want) || s.DropsBy[ReasonLimit] != uint64(tc.want) {
			t.Errorf("batch %d: drop_overlimit %d, limit drops %d, want %d", tc.batch, s.FQ.DropOverlimit, s.DropsBy[ReasonLimit], tc.want)
		}
		for i := range tc.want {
			m, v, ok := acc.dequeue(q, ms)
			if !ok || v.Action != Drop || v.Reason != ReasonLimit || v.Sub != fat || m.Flow != flowBulk {
				t.Fatalf("batch %d: dequeue %d: %+v %+v, want a limit drop of flow %d", tc.batch, i, m, v, fat)
			}
		}
		if _, v, _ := acc.dequeue(q, ms); v.Action == Drop {
			t.Fatalf("batch %d: more drops than %d", tc.batch, tc.want)
		}
		acc.check(t, q, ms)
	}
}

// memory_limit also triggers the batch drop, counted in drop_overmemory.
func TestFQCodelMemoryLimit(t *testing.T) {
	q := newTestFQCodel(t, func(c *FQCodelConfig) { c.MemoryLimit = 50_000 })
	for range 50 {
		mustEnqueue(t, q, flowPkt(flowBulk, NotECT, 1000), 0)
	}
	mustEnqueue(t, q, flowPkt(flowBulk, NotECT, 1000), 0)
	// 51000 B > 50000: half of 51000 is 25500, so 26 packets go.
	if s := q.Stats(0); s.FQ.DropOvermemory != 26 || s.FQ.DropOverlimit != 26 {
		t.Errorf("drop_overmemory %d drop_overlimit %d, want 26", s.FQ.DropOvermemory, s.FQ.DropOverlimit)
	}
}

// DRR: two backlogged flows with 1500- and 300-byte packets share the
// link's bytes equally (RFC 8290 §4.2), within one quantum.
func TestFQCodelDRRByteFairness(t *testing.T) {
	q := newTestFQCodel(t, func(c *FQCodelConfig) { c.ECN = true })
	var acc accounting
	bytes := map[uint32]int64{}
	simLink(t, q, &acc, 100_000_000, 200*ms, func(now int64) {
		for q.backlogs[q.FlowOf(flowBulk)-1] < 20*1500 {
			acc.enqueue(t, q, flowPkt(flowBulk, ECT0, 1500), now)
		}
		for q.backlogs[q.FlowOf(flowSparse)-1] < 20*1500 {
			acc.enqueue(t, q, flowPkt(flowSparse, ECT0, 300), now)
		}
	}, func(m Meta, v Verdict, now int64) { bytes[m.Flow] += int64(m.Len) })
	if d := bytes[flowBulk] - bytes[flowSparse]; d > 2*DefaultPschedMTU || d < -2*DefaultPschedMTU {
		t.Errorf("bytes sent %v: differ by %d, more than two quanta", bytes, d)
	}
}

func TestFQCodelValidate(t *testing.T) {
	for _, tc := range []struct {
		mod   func(*FQCodelConfig)
		field string
	}{
		{func(c *FQCodelConfig) { c.Flows = 0 }, "flows"},
		{func(c *FQCodelConfig) { c.Flows = 65537 }, "flows"},
		{func(c *FQCodelConfig) { c.Quantum = 255 }, "quantum"},
		{func(c *FQCodelConfig) { c.DropBatch = 0 }, "drop_batch"},
		{func(c *FQCodelConfig) { c.MemoryLimit = 1<<31 + 1 }, "memory_limit"},
	} {
		cfg := DefaultFQCodelConfig()
		tc.mod(&cfg)
		if ce, ok := cfg.Validate().(*ConfigError); !ok || ce.Field != tc.field {
			t.Errorf("Validate(%+v): want a ConfigError on %q", cfg, tc.field)
		}
	}
	q := newTestFQCodel(t, nil)
	cfg := q.Config()
	cfg.Flows = 16
	if err := q.Change(cfg, 0, nil); err == nil {
		t.Error("Change of the flow count: no error")
	}
}
