package aqm

// fq_codel: FlowQueue-CoDel (RFC 8290) with the semantics of Linux
// net/sched/sch_fq_codel.c: packets hashed into flows (buckets) by the
// 5-tuple, deficit round robin with a new-flows list served before the
// old-flows list, one CoDel state machine per flow (sharing the
// parameters and statistics), and on overflow a batch drop from the head
// of the flow with the largest backlog.
//
// Everything lives in fixed arrays: packets in a node pool linked per flow
// by index (Meta.next), flows in a table, the two lists linked through
// the table. Enqueue and Dequeue allocate nothing.
//
// Deliberate differences from the kernel, each commented where it lives:
//   - memory_limit counts bytes of packet data (Meta.Len), not skb truesize;
//   - no tc filters or skb->priority classification: the flow is always
//     the hash's bucket (Meta.Flow, reciprocal-scaled as the kernel);
//   - packets dropped by CoDel or by the overflow batch are handed back by
//     the following Dequeue calls with Action Drop (the Queue contract),
//     before the packet that is sent.

import "math"

// FQCodelConfig holds sch_fq_codel's parameters (tc names in comments).
type FQCodelConfig struct {
	Limit       uint32 // limit: packets
	Flows       uint32 // flows: buckets (fixed once created)
	Quantum     uint32 // quantum: DRR bytes per round
	Target      int64  // target: ns
	Interval    int64  // interval: ns
	ECN         bool   // ecn (kernel default on)
	CEThreshold int64  // ce_threshold: ns, or CEThresholdOff
	// ce_threshold_selector VALUE/MASK: with a non-zero selector only
	// packets whose DS field (DSCP<<2 | ECN) & mask == selector get
	// ce_threshold marks; 0x01/0x01 selects ECT(1) (and CE), so a shallow
	// threshold marks L4S traffic only.
	CESelector  uint8
	CEMask      uint8
	MemoryLimit uint64 // memory_limit: bytes
	DropBatch   uint32 // drop_batch: most packets dropped from the fat flow per overflow
	MTU         int    // bytes: CoDel's "backlog <= mtu" guard (psched_mtu, 1514)
}

// Kernel defaults (fq_codel_init).
const (
	DefaultFQCodelLimit       = 10 * 1024
	DefaultFQCodelFlows       = 1024
	DefaultFQCodelMemoryLimit = 32 << 20
	DefaultFQCodelDropBatch   = 64
)

// DefaultFQCodelConfig returns sch_fq_codel's defaults: limit 10240,
// flows 1024, quantum 1514, target 5ms, interval 100ms, ecn,
// no ce_threshold, memory_limit 32Mb, drop_batch 64.
func DefaultFQCodelConfig() FQCodelConfig {
	return FQCodelConfig{
		Limit:       DefaultFQCodelLimit,
		Flows:       DefaultFQCodelFlows,
		Quantum:     DefaultPschedMTU,
		Target:      DefaultCodelTarget,
		Interval:    DefaultCodelInterval,
		ECN:         true,
		CEThreshold: CEThresholdOff,
		MemoryLimit: DefaultFQCodelMemoryLimit,
		DropBatch:   DefaultFQCodelDropBatch,
		MTU:         DefaultPschedMTU,
	}
}

// Validate checks the parameters against the kernel's netlink policy:
// flows 1..65536, quantum 256..2^20, memory_limit up to 2^31, times in u32 µs.
func (c FQCodelConfig) Validate() error {
	return checkRanges([]ConfigError{
		{"limit", int64(c.Limit), 1, math.MaxUint32, UnitPackets},
		{"flows", int64(c.Flows), 1, 65536, ""},
		{"quantum", int64(c.Quantum), 256, 1 << 20, ""},
		{"target", c.Target, 0, maxCodelTime, UnitNanos},
		{"interval", c.Interval, 1000, maxCodelTime, UnitNanos},
		{"ce_threshold", c.CEThreshold, CEThresholdOff, maxCodelTime, UnitNanos},
		{"memory_limit", int64(min(c.MemoryLimit, math.MaxInt64)), 1, 1 << 31, ""},
		{"drop_batch", int64(c.DropBatch), 1, math.MaxUint32, UnitPackets},
		{"mtu", int64(c.MTU), minMTU, maxMTU, ""},
	})
}

// fqFlow is one bucket: its packets (node indices + 1, 0 = none), its DRR
// deficit, its CoDel state and its link in the new or old list.
type fqFlow struct {
	head, tail int32
	deficit    int32
	list       uint8 // fqNone, fqNew or fqOld
	nextFlow   int32 // next flow in its list, index + 1
	cv         codelVars
}

const (
	fqNone uint8 = iota
	fqNew
	fqOld
)

// fqList is an intrusive singly linked list of flows (indices + 1).
type fqList struct {
	head, tail int32
	n          int
}

// FQCodel is sch_fq_codel. It implements Queue.
type FQCodel struct {
	cfg FQCodelConfig
	p   codelParams
	cst codelStats

	flows    []fqFlow
	backlogs []uint32 // per flow, bytes (scanned for the fattest flow)
	nodes    []Meta   // packet pool; Meta.next links a flow's packets
	free     []int32  // free node indices
	newFlows fqList
	oldFlows fqList

	qlen    int
	backlog int    // bytes queued, all flows
	memory  uint64 // bytes queued (what memory_limit bounds)

	src fqSource // the flow CoDel is draining
	hb  handback
	tmp ring // drops of the CoDel dequeue in progress

	st             Stats
	dropOverlimit  uint64
	dropOvermemory uint64
	newFlowCount   uint64
}

var _ Queue = (*FQCodel)(nil)

// NewFQCodel returns an empty fq_codel with cfg.Flows buckets.
func NewFQCodel(cfg FQCodelConfig) (*FQCodel, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	q := &FQCodel{
		flows:    make([]fqFlow, cfg.Flows),
		backlogs: make([]uint32, cfg.Flows),
	}
	q.src.q = q
	q.apply(cfg)
	q.hb.drops = newRing(2 * int(min(cfg.DropBatch, 1024)))
	q.tmp = newRing(64)
	return q, nil
}

func (q *FQCodel) apply(cfg FQCodelConfig) {
	q.cfg = cfg
	q.p = newCodelParams(cfg.Target, cfg.Interval, cfg.CEThreshold, cfg.MTU, cfg.ECN)
	q.p.ceSelector, q.p.ceMask = cfg.CESelector, cfg.CEMask
	// One node more than the limit: a packet is added before the
	// overflow drop removes others.
	want := int(min(uint64(cfg.Limit)+1, maxPrealloc))
	if len(q.nodes) < want {
		q.grow(want)
	}
	q.st.MemoryLimit = cfg.MemoryLimit
}

// grow extends the node pool to n nodes (at construction, on a change, or
// when more than maxPrealloc packets are queued: amortised doubling).
func (q *FQCodel) grow(n int) {
	old := len(q.nodes)
	nodes := make([]Meta, n)
	copy(nodes, q.nodes)
	q.nodes = nodes
	if cap(q.free) < n {
		free := make([]int32, len(q.free), n)
		copy(free, q.free)
		q.free = free
	}
	for i := n - 1; i >= old; i-- {
		q.free = append(q.free, int32(i))
	}
}

// Config returns the configuration in force.
func (q *FQCodel) Config() FQCodelConfig { return q.cfg }

// Change applies a new configuration as tc qdisc change (the flow count
// cannot change, as in the kernel); while over a lower limit, packets are
// dequeued and dropped (counted as limit drops, passed to drop).
func (q *FQCodel) Change(cfg FQCodelConfig, now int64, drop func(Meta)) error {
	if cfg.Flows != q.cfg.Flows {
		return &ConfigError{Field: "flows", Value: int64(cfg.Flows), Min: int64(q.cfg.Flows), Max: int64(q.cfg.Flows)}
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	q.apply(cfg)
	for q.qlen > int(cfg.Limit) || q.memory > cfg.MemoryLimit {
		m, v, ok := q.Dequeue(now)
		if !ok {
			break
		}
		if v.Action != Drop {
			// Counted as sent by Dequeue; the kernel frees it as a drop.
			q.st.SentPackets--
			q.st.SentBytes -= uint64(m.Len)
			q.st.C.Sent--
			q.st.C.Bytes -= uint64(m.Len)
			if v.Action == Mark {
				q.st.C.Marked--
			}
			q.st.countDrop(ReasonLimit)
		}
		if drop != nil {
			drop(m)
		}
	}
	return nil
}

// bucket maps a flow hash to a flow index as the kernel's reciprocal_scale.
func (q *FQCodel) bucket(hash uint32) int32 {
	return int32(uint64(hash) * uint64(len(q.flows)) >> 32)
}

// Enqueue adds m to its flow's queue (a flow not in a list joins the new
// flows with a full quantum). Over the packet or memory limit, up to
// drop_batch packets are then dropped from the head of the flow with the
// largest backlog until half its backlog is gone; they are handed back by
// the next Dequeue calls. m itself is accepted (Pass) unless it is one of
// them.
func (q *FQCodel) Enqueue(m Meta, now int64) Verdict {
	m = cleanMeta(m)
	idx := q.bucket(m.Flow)
	m.Arrival = now
	q.st.enqueued(&m, q.qlen)
	q.push(idx, m)
	f := &q.flows[idx]
	if f.list == fqNone {
		q.newFlows.pushTail(q.flows, idx, fqNew)
		q.newFlowCount++
		f.deficit = int32(q.cfg.Quantum)
	}
	q.st.MaxMemoryUsed = max(q.st.MaxMemoryUsed, q.memory)
	memoryLimited := q.memory > q.cfg.MemoryLimit
	if q.qlen <= int(q.cfg.Limit) && !memoryLimited {
		return Verdict{Class: Classic, Sub: uint32(idx + 1)}
	}
	before := q.qlen
	q.dropFattest()
	dropped := uint64(before - q.qlen)
	q.dropOverlimit += dropped
	q.st.Overlimits += dropped
	if memoryLimited {
		q.dropOvermemory += dropped
	}
	return Verdict{Class: Classic, Sub: uint32(idx + 1)}
}

// push appends m to flow idx.
func (q *FQCodel) push(idx int32, m Meta) {
	if len(q.free) == 0 {
		q.grow(2 * len(q.nodes))
	}
	n := q.free[len(q.free)-1]
	q.free = q.free[:len(q.free)-1]
	m.next = 0
	q.nodes[n] = m
	f := &q.flows[idx]
	if f.head == 0 {
		f.head = n + 1
	} else {
		q.nodes[f.tail-1].next = n + 1
	}
	f.tail = n + 1
	q.backlogs[idx] += uint32(m.Len)
	q.backlog += int(m.Len)
	q.memory += uint64(m.Len)
	q.qlen++
}

// popHead removes the head packet of flow idx, which must not be empty.
func (q *FQCodel) popHead(idx int32) Meta {
	f := &q.flows[idx]
	n := f.head - 1
	m := q.nodes[n]
	q.nodes[n] = Meta{}
	q.free = append(q.free, n)
	f.head = m.next
	if f.head == 0 {
		f.tail = 0
	}
	m.next = 0
	q.backlogs[idx] -= uint32(m.Len)
	q.backlog -= int(m.Len)
	q.memory -= uint64(m.Len)
	q.qlen--
	return m
}

// dropFattest is fq_codel_drop: find the flow with the largest backlog
// (the first one on a tie) and drop from its head until half of that
// backlog is gone or drop_batch packets are; its CoDel count rises by
// the packets dropped, to strengthen its signal.
func (q *FQCodel) dropFattest() {
	var fat int32
	var maxBacklog uint32
	for i, b := range q.backlogs {
		if b > maxBacklog {
			maxBacklog, fat = b, int32(i)
		}
	}
	threshold := int(maxBacklog >> 1)
	dropped, n := 0, uint32(0)
	for {
		m := q.popHead(fat)
		dropped += int(m.Len)
		q.st.countDrop(ReasonLimit)
		q.hb.hold(m, ReasonLimit, uint32(fat+1))
		n++
		if n >= q.cfg.DropBatch || dropped >= threshold || q.flows[fat].head == 0 {
			break
		}
	}
	q.flows[fat].cv.count += n
}

// fqSource drains one flow for its CoDel state machine.
type fqSource struct {
	q *FQCodel
	f int32
}

func (s *fqSource) pop() (Meta, bool) {
	if s.q.flows[s.f].head == 0 {
		return Meta{}, false
	}
	return s.q.popHead(s.f), true
}

// backlog is the whole qdisc's backlog, as the kernel passes
// &sch->qstats.backlog to codel_dequeue for every flow.
func (s *fqSource) backlog() int { return s.q.backlog }

// Dequeue is fq_codel_dequeue: serve the first flow of the new list, else
// of the old list; a flow out of deficit gets another quantum and goes to
// the end of the old list; an empty flow leaves the new list for the old
// one (so it cannot starve old flows by coming back) or leaves the old
// list. The flow's CoDel decides at the head. Verdict.Sub is the flow
// number (bucket + 1).
func (q *FQCodel) Dequeue(now int64) (Meta, Verdict, bool) {
	if m, v, ok := q.hb.next(); ok {
		return m, v, true
	}
	for {
		list, which := &q.newFlows, fqNew
		if list.n == 0 {
			list, which = &q.oldFlows, fqOld
			if list.n == 0 {
				return q.hb.next()
			}
		}
		idx := list.head - 1
		f := &q.flows[idx]
		if f.deficit <= 0 {
			f.deficit += int32(q.cfg.Quantum)
			list.popHead(q.flows)
			q.oldFlows.pushTail(q.flows, idx, fqOld)
			continue
		}
		q.src.f = idx
		r := q.p.dequeue(&q.src, &f.cv, &q.cst, &q.tmp, now)
		for q.tmp.len() > 0 {
			q.st.countDrop(ReasonCodel)
			q.hb.hold(q.tmp.pop(), ReasonCodel, uint32(idx+1))
		}
		if !r.ok {
			list.popHead(q.flows)
			if which == fqNew && q.oldFlows.n > 0 {
				q.oldFlows.pushTail(q.flows, idx, fqOld)
			}
			continue
		}
		f.deficit -= r.m.Len
		v := q.st.sent(&r.m, r.marked, r.why)
		v.Sub = uint32(idx + 1)
		if q.hb.drops.len() == 0 {
			return r.m, v, true
		}
		q.hb.ready, q.hb.readyV, q.hb.haveReady = r.m, v, true
		return q.hb.next()
	}
}

// pushTail appends flow idx to l and records which list holds it.
func (l *fqList) pushTail(flows []fqFlow, idx int32, which uint8) {
	f := &flows[idx]
	f.list, f.nextFlow = which, 0
	if l.tail == 0 {
		l.head = idx + 1
	} else {
		flows[l.tail-1].nextFlow = idx + 1
	}
	l.tail = idx + 1
	l.n++
}

// popHead removes the first flow of l (list_del_init).
func (l *fqList) popHead(flows []fqFlow) {
	f := &flows[l.head-1]
	l.head = f.nextFlow
	if l.head == 0 {
		l.tail = 0
	}
	f.list, f.nextFlow = fqNone, 0
	l.n--
}

// Advance does nothing: fq_codel decides at enqueue and dequeue.
func (q *FQCodel) Advance(now int64) {}

// NextUpdate returns math.MaxInt64: fq_codel has no periodic work.
func (q *FQCodel) NextUpdate() int64 { return math.MaxInt64 }

// Len returns the packets and bytes held: queued, and decided but not yet
// handed out.
func (q *FQCodel) Len() (pkts, bytes int) {
	return q.qlen + q.hb.len(), q.backlog + q.hb.bytes()
}

// Stats returns the counters; FQ holds the tc -s fq_codel xstats. DelayC
// is the head sojourn of the flow DRR serves next (the first of the new
// flows, else of the old ones): O(1), as callers may ask per packet.
func (q *FQCodel) Stats(now int64) Stats {
	s := q.st
	s.Kind = KindFQCodel
	s.MemoryUsed = q.memory
	s.BacklogPkts, s.BacklogBytes = q.qlen, q.backlog
	s.ECNMark = q.cst.ecnMark + q.cst.ceMark
	for _, l := range [...]*fqList{&q.newFlows, &q.oldFlows} {
		if l.head != 0 {
			if h := q.flows[l.head-1].head; h != 0 {
				s.DelayC = max(now-q.nodes[h-1].Arrival, 0)
			}
			break
		}
	}
	s.FQ = FQCodelXStats{
		MaxPacket:      q.cst.maxpacket,
		DropOverlimit:  q.dropOverlimit,
		ECNMark:        q.cst.ecnMark,
		NewFlowCount:   q.newFlowCount,
		NewFlowsLen:    q.newFlows.n,
		OldFlowsLen:    q.oldFlows.n,
		CEMark:         q.cst.ceMark,
		MemoryUsage:    q.memory,
		DropOvermemory: q.dropOvermemory,
	}
	return s
}

// FlowOf returns the flow number (bucket + 1) a flow hash maps to, as
// Verdict.Sub reports it.
func (q *FQCodel) FlowOf(hash uint32) uint32 { return uint32(q.bucket(hash) + 1) }

// Reset empties every flow and restarts every CoDel state (fq_codel_reset),
// keeping configuration and counters; packets go to release if not nil.
func (q *FQCodel) Reset() { q.ResetAndRelease(nil) }

// ResetAndRelease is Reset, calling release (if not nil) for each packet
// discarded.
func (q *FQCodel) ResetAndRelease(release func(Meta)) {
	q.hb.discard(release)
	for i := range q.flows {
		for q.flows[i].head != 0 {
			m := q.popHead(int32(i))
			if release != nil {
				release(m)
			}
		}
		q.flows[i] = fqFlow{}
	}
	q.newFlows, q.oldFlows = fqList{}, fqList{}
}
