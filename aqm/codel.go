package aqm

// CoDel: Controlled Delay (RFC 8289) with the semantics of Linux
// include/net/codel_impl.h and net/sched/sch_codel.c. The control law is
// shared with fq_codel (fqcodel.go), which runs one codelVars per flow.
//
// Deliberate differences from the kernel, each commented where it lives:
//   - time is injected; CoDel time is the kernel's codel_time_t unit
//     (ns >> 10, about 1 µs) but in 64 bits, so it never wraps (the
//     kernel's u32 wraps every 73 minutes, harmlessly);
//   - a packet CoDel drops at dequeue is handed back by the next Dequeue
//     call(s) with Action Drop before the packet that survived, as the
//     Queue interface asks, rather than freed inside the loop;
//   - the MTU of the "backlog <= mtu" guard is Config.MTU (1514 by
//     default: psched_mtu of an Ethernet device, as the kernel).

import "math"

// codelShift: CoDel time is ns >> 10 (the kernel's CODEL_SHIFT).
const codelShift = 10

// recInvSqrtShift: rec_inv_sqrt is kept in 16 bits, the upper half of a
// Q0.32 fixed-point number (REC_INV_SQRT_SHIFT = 32 - 16).
const recInvSqrtShift = 16

// CEThresholdOff disables ce_threshold marking (the kernel's
// CODEL_DISABLED_THRESHOLD).
const CEThresholdOff = -1

// Kernel defaults shared by codel and fq_codel (codel_params_init).
const (
	DefaultCodelTarget   = 5_000_000   // ns
	DefaultCodelInterval = 100_000_000 // ns
	DefaultCodelLimit    = 1000        // packets (sch_codel)
	// DefaultPschedMTU is psched_mtu() of an Ethernet device: MTU 1500
	// plus the 14-byte link header. CoDel's "backlog <= mtu" guard and
	// fq_codel's quantum default to it.
	DefaultPschedMTU = 1514
)

// CodelConfig holds sch_codel's parameters, in ns for times; tc's names in
// comments. DefaultCodelConfig gives the kernel's defaults.
type CodelConfig struct {
	Limit       uint32 // limit: packets
	Target      int64  // target: ns
	Interval    int64  // interval: ns
	ECN         bool   // ecn (kernel default noecn): mark ECT packets instead of dropping
	CEThreshold int64  // ce_threshold: ns, or CEThresholdOff
	MTU         int    // bytes: no drop while the backlog is at most this
}

// DefaultCodelConfig returns sch_codel's defaults: limit 1000, target 5ms,
// interval 100ms, noecn, no ce_threshold, mtu 1514.
func DefaultCodelConfig() CodelConfig {
	return CodelConfig{
		Limit:       DefaultCodelLimit,
		Target:      DefaultCodelTarget,
		Interval:    DefaultCodelInterval,
		CEThreshold: CEThresholdOff,
		MTU:         DefaultPschedMTU,
	}
}

// maxCodelTime: times travel in µs in u32 netlink attributes.
const maxCodelTime = math.MaxUint32 * 1000

// Validate checks the parameters against what the kernel accepts (times in
// u32 µs). A limit of 0 is refused: it would refuse every packet.
func (c CodelConfig) Validate() error {
	return checkRanges(c.ranges())
}

func (c CodelConfig) ranges() []ConfigError {
	return []ConfigError{
		{"limit", int64(c.Limit), 1, math.MaxUint32, UnitPackets},
		{"target", c.Target, 0, maxCodelTime, UnitNanos},
		{"interval", c.Interval, 1000, maxCodelTime, UnitNanos},
		{"ce_threshold", c.CEThreshold, CEThresholdOff, maxCodelTime, UnitNanos},
		{"mtu", int64(c.MTU), minMTU, maxMTU, ""},
	}
}

// codelParams are the parameters in CoDel time (the kernel's codel_params).
type codelParams struct {
	target, interval int64 // CoDel time
	ceThreshold      int64 // CoDel time; math.MaxInt64 when off
	mtu              int
	ecn              bool
	// ce_threshold_selector/mask (fq_codel): with a non-zero selector only
	// packets whose DS field & mask == selector are ce_threshold-marked.
	ceSelector, ceMask uint8
}

func newCodelParams(target, interval, ceThreshold int64, mtu int, ecn bool) codelParams {
	p := codelParams{
		target:      target >> codelShift,
		interval:    interval >> codelShift,
		ceThreshold: math.MaxInt64,
		mtu:         mtu,
		ecn:         ecn,
	}
	if ceThreshold >= 0 {
		p.ceThreshold = ceThreshold >> codelShift
	}
	return p
}

// codelVars is one CoDel state machine (the kernel's codel_vars).
type codelVars struct {
	count          uint32 // drops (or marks) since entering the dropping state
	lastcount      uint32 // count when the dropping state was last entered
	dropping       bool
	recInvSqrt     uint16 // 1/sqrt(count), Q0.16
	firstAboveTime int64  // CoDel time; 0 = sojourn not above target
	dropNext       int64  // CoDel time of the next drop in the dropping state
	ldelay         int64  // sojourn of the last packet examined, CoDel time
}

// codelStats are the counters a CoDel qdisc keeps (the kernel's
// codel_stats plus what the qdisc counts).
type codelStats struct {
	maxpacket uint32
	ecnMark   uint64 // control-law CE marks
	ceMark    uint64 // ce_threshold CE marks
}

// codelSource is the queue a CoDel state machine drains: the single ring of
// sch_codel, or one flow of fq_codel. pop removes the head; backlog is the
// qdisc's whole backlog in bytes after that (fq_codel passes the qdisc's,
// not the flow's, as the kernel does).
type codelSource interface {
	pop() (Meta, bool)
	backlog() int
}

// newtonStep refines rec_inv_sqrt for the current count with one Newton
// iteration of 1/sqrt(x): r' = r/2 · (3 − count·r²), in Q0.32 (the
// kernel's codel_Newton_step). One step per count increment is an
// approximation that converges as count grows (0.5 for count 2 where
// 1/√2 = 0.707; within 1 % from count 5).
func (v *codelVars) newtonStep() {
	invsqrt := uint32(v.recInvSqrt) << recInvSqrtShift
	invsqrt2 := uint32(uint64(invsqrt) * uint64(invsqrt) >> 32)
	val := 3<<32 - uint64(v.count)*uint64(invsqrt2)
	val >>= 2 // avoid overflow in the multiply below
	val = val * uint64(invsqrt) >> (32 - 2 + 1)
	v.recInvSqrt = uint16(val >> recInvSqrtShift)
}

// controlLaw is t + interval/sqrt(count) with the reciprocal kept in
// rec_inv_sqrt (RFC 8289 §3.3; the kernel's codel_control_law with
// reciprocal_scale: interval · rec·2^16 / 2^32).
func controlLaw(t, interval int64, recInvSqrt uint16) int64 {
	return t + int64(uint64(uint32(interval))*uint64(uint32(recInvSqrt)<<recInvSqrtShift)>>32)
}

// shouldDrop is the kernel's codel_should_drop: true when the packet's
// sojourn has been at or above target for at least an interval and more
// than an MTU is queued. It records the sojourn in ldelay.
func (p *codelParams) shouldDrop(m *Meta, ok bool, v *codelVars, st *codelStats, backlog int, now int64) bool {
	if !ok {
		v.firstAboveTime = 0
		return false
	}
	v.ldelay = now - m.Arrival>>codelShift
	st.maxpacket = max(st.maxpacket, uint32(m.Len))
	if v.ldelay < p.target || backlog <= p.mtu {
		// Went below: stay below for at least an interval.
		v.firstAboveTime = 0
		return false
	}
	if v.firstAboveTime == 0 {
		// Just went above: OK to drop if it stays above for an interval.
		v.firstAboveTime = now + p.interval
		return false
	}
	return now > v.firstAboveTime
}

// codelResult is what one CoDel dequeue decided about the packet it
// returns (drops it made on the way went to the drop list).
type codelResult struct {
	m      Meta
	ok     bool
	marked bool
	why    Reason
	count  uint32 // the control law's count at a codel mark
	drops  int    // packets dropped on the way (appended to the drop list)
}

// codelDequeue is the kernel's codel_dequeue at time nowNs: it takes the
// head of src, runs the state machine, drops into drops (each counted by
// the caller; its Meta.next holds the control law's count at the drop,
// the "drop state" captures report) or CE-marks, and returns the packet
// to send, if any.
func (p *codelParams) dequeue(src codelSource, v *codelVars, st *codelStats, drops *ring, nowNs int64) codelResult {
	m, ok := src.pop()
	if !ok {
		v.dropping = false
		return codelResult{}
	}
	now := nowNs >> codelShift
	r := codelResult{}
	drop := p.shouldDrop(&m, ok, v, st, src.backlog(), now)
	switch {
	case v.dropping && !drop:
		// Sojourn below target: leave the dropping state.
		v.dropping = false
	case v.dropping && now >= v.dropNext:
		// Time for the next drop (or mark). A large backlog can make the
		// next drop due at once, hence the loop.
		for ok && v.dropping && now >= v.dropNext {
			v.count++ // wraps harmlessly, as the kernel's
			v.newtonStep()
			if p.ecn && m.ECN != NotECT {
				st.ecnMark++
				r.marked, r.why, r.count = true, ReasonCodel, v.count
				v.dropNext = controlLaw(v.dropNext, p.interval, v.recInvSqrt)
				break
			}
			m.next = int32(v.count)
			drops.push(m)
			r.drops++
			m, ok = src.pop()
			if !p.shouldDrop(&m, ok, v, st, src.backlog(), now) {
				v.dropping = false
			} else {
				v.dropNext = controlLaw(v.dropNext, p.interval, v.recInvSqrt)
			}
		}
	case !v.dropping && drop:
		var first Meta // the packet dropped on entering, pushed once count is known
		entered := false
		if p.ecn && m.ECN != NotECT {
			st.ecnMark++
			r.marked, r.why = true, ReasonCodel
		} else {
			first, entered = m, true
			m, ok = src.pop()
			p.shouldDrop(&m, ok, v, st, src.backlog(), now)
		}
		v.dropping = true
		// Re-entering soon after leaving: start from the drop rate that
		// controlled the queue last time (RFC 8289 §5.4's "count decay"
		// as the kernel does it: count − lastcount if > 1 and the last
		// drop was less than 16 intervals ago).
		delta := v.count - v.lastcount
		if delta > 1 && now-v.dropNext < 16*p.interval {
			v.count = delta
			v.newtonStep()
		} else {
			v.count = 1
			v.recInvSqrt = ^uint16(0)
		}
		v.lastcount = v.count
		v.dropNext = controlLaw(now, p.interval, v.recInvSqrt)
		r.count = v.count
		if entered {
			first.next = int32(v.count)
			drops.push(first)
			r.drops++
		}
	}
	if ok && v.ldelay > p.ceThreshold {
		set := true
		if p.ceSelector != 0 {
			set = m.DSField()&p.ceMask == p.ceSelector
		}
		if set && m.ECN != NotECT {
			st.ceMark++
			if !r.marked {
				r.marked, r.why = true, ReasonCEThreshold
			}
		}
	}
	r.m, r.ok = m, ok
	return r
}

// handback holds what a dequeue decided but the Queue interface hands out
// one packet per call: the packets dropped on the way (first, in order),
// then the one to send.
type handback struct {
	drops     ring
	ready     Meta
	readyV    Verdict
	haveReady bool
}

// next returns the next decided packet, if any.
// discard empties h, handing each packet to release (if not nil).
func (h *handback) discard(release func(Meta)) {
	for {
		m, _, ok := h.next()
		if !ok {
			return
		}
		if release != nil {
			release(m)
		}
	}
}

func (h *handback) next() (Meta, Verdict, bool) {
	if h.drops.len() > 0 {
		m := h.drops.pop()
		return m, h.dropVerdict(&m), true
	}
	if h.haveReady {
		h.haveReady = false
		m := h.ready
		h.ready = Meta{}
		return m, h.readyV, true
	}
	return Meta{}, Verdict{}, false
}

// dropVerdict is the verdict of a handed-back drop: while held, its reason
// and sub-queue travel in the Meta's earlyMark and next fields, cleared
// here.
func (h *handback) dropVerdict(m *Meta) Verdict {
	v := Verdict{Action: Drop, Reason: m.earlyMark, Class: Classic, Sub: uint32(m.next)}
	m.earlyMark, m.next = ReasonNone, 0
	return v
}

// hold queues a drop to hand back with its reason and sub-queue.
func (h *handback) hold(m Meta, why Reason, sub uint32) {
	m.earlyMark, m.next = why, int32(sub)
	h.drops.push(m)
}

func (h *handback) len() int {
	n := h.drops.len()
	if h.haveReady {
		n++
	}
	return n
}

func (h *handback) bytes() int {
	n := h.drops.bytes
	if h.haveReady {
		n += int(h.ready.Len)
	}
	return n
}

// CoDel is sch_codel: one FIFO under the CoDel control law. It implements
// Queue.
type CoDel struct {
	cfg CodelConfig
	p   codelParams
	v   codelVars
	cst codelStats
	q   ring
	hb  handback
	tmp ring // drops of the dequeue in progress

	st            Stats
	dropOverlimit uint64
}

var _ Queue = (*CoDel)(nil)

// NewCoDel returns an empty CoDel queue.
func NewCoDel(cfg CodelConfig) (*CoDel, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	q := &CoDel{}
	q.apply(cfg)
	q.hb.drops = newRing(64)
	q.tmp = newRing(64)
	return q, nil
}

func (q *CoDel) apply(cfg CodelConfig) {
	q.cfg = cfg
	q.p = newCodelParams(cfg.Target, cfg.Interval, cfg.CEThreshold, cfg.MTU, cfg.ECN)
	q.q.reserve(int(min(cfg.Limit, maxPrealloc)))
}

// Config returns the configuration in force.
func (q *CoDel) Config() CodelConfig { return q.cfg }

// Change applies a new configuration, as tc qdisc change: the CoDel state
// is kept; packets over a lower limit are dropped from the head and passed
// to drop (may be nil), counted as limit drops.
func (q *CoDel) Change(cfg CodelConfig, now int64, drop func(Meta)) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	q.apply(cfg)
	for q.q.len() > int(cfg.Limit) {
		m := q.q.pop()
		q.st.countDrop(ReasonLimit)
		if drop != nil {
			drop(m)
		}
	}
	return nil
}

// Enqueue queues m with Arrival = now, or refuses it at the packet limit
// (sch_codel's only enqueue decision).
func (q *CoDel) Enqueue(m Meta, now int64) Verdict {
	m = cleanMeta(m)
	if q.q.len() >= int(q.cfg.Limit) {
		q.dropOverlimit++
		q.st.Overlimits++
		q.st.countDrop(ReasonLimit)
		return Verdict{Action: Drop, Reason: ReasonLimit, Class: Classic}
	}
	m.Arrival = now
	q.st.enqueued(&m, q.q.len())
	q.q.push(m)
	q.st.MaxMemoryUsed = max(q.st.MaxMemoryUsed, uint64(q.q.bytes))
	return Verdict{Class: Classic}
}

// ringSource drains a plain ring for the CoDel state machine.
type ringSource struct{ r *ring }

func (s ringSource) pop() (Meta, bool) {
	if s.r.len() == 0 {
		return Meta{}, false
	}
	return s.r.pop(), true
}

func (s ringSource) backlog() int { return s.r.bytes }

// Dequeue runs the CoDel state machine at now. Packets it drops come out
// first, one per call with Action Drop (reason codel), then the packet it
// sends (Mark with reason codel or ce_threshold when it set CE). For a
// codel drop or mark, Verdict.Sub is the control law's count then: the
// drop state a capture annotates.
func (q *CoDel) Dequeue(now int64) (Meta, Verdict, bool) {
	if m, v, ok := q.hb.next(); ok {
		return m, v, true
	}
	r := q.p.dequeue(ringSource{&q.q}, &q.v, &q.cst, &q.tmp, now)
	for q.tmp.len() > 0 {
		q.st.countDrop(ReasonCodel)
		m := q.tmp.pop()
		q.hb.hold(m, ReasonCodel, uint32(m.next))
	}
	if !r.ok {
		return q.hb.next()
	}
	v := q.st.sent(&r.m, r.marked, r.why)
	if r.why == ReasonCodel {
		v.Sub = r.count
	}
	if q.hb.drops.len() == 0 {
		return r.m, v, true
	}
	q.hb.ready, q.hb.readyV, q.hb.haveReady = r.m, v, true
	return q.hb.next()
}

// Advance does nothing: CoDel decides at dequeue, with no periodic work.
func (q *CoDel) Advance(now int64) {}

// NextUpdate returns math.MaxInt64: CoDel has no periodic work.
func (q *CoDel) NextUpdate() int64 { return math.MaxInt64 }

// Len returns the packets and bytes held: queued, and decided at a
// dequeue but not yet handed out.
func (q *CoDel) Len() (pkts, bytes int) {
	return q.q.len() + q.hb.len(), q.q.bytes + q.hb.bytes()
}

// Stats returns the counters; CoDel holds the tc -s codel xstats.
func (q *CoDel) Stats(now int64) Stats {
	s := q.st
	s.Kind = KindCoDel
	s.DelayC = headDelay(&q.q, now)
	s.MemoryUsed = uint64(q.q.bytes)
	s.BacklogPkts, s.BacklogBytes = q.q.len(), q.q.bytes
	s.ECNMark = q.cst.ecnMark + q.cst.ceMark
	s.CoDel = codelXStats(&q.v, &q.cst, q.dropOverlimit, now)
	return s
}

// codelXStats fills tc's codel xstats from one state machine.
func codelXStats(v *codelVars, st *codelStats, dropOverlimit uint64, now int64) CodelXStats {
	x := CodelXStats{
		MaxPacket:     st.maxpacket,
		Count:         v.count,
		LastCount:     v.lastcount,
		LDelay:        v.ldelay << codelShift,
		Dropping:      v.dropping,
		DropOverlimit: dropOverlimit,
		ECNMark:       st.ecnMark,
		CEMark:        st.ceMark,
	}
	if v.dropping {
		x.DropNext = (v.dropNext - now>>codelShift) << codelShift
	}
	return x
}

// Reset empties the queue and restarts the CoDel state, keeping the
// configuration and counters; queued packets (and decided ones not yet
// handed out) go to release if not nil.
func (q *CoDel) Reset() { q.ResetAndRelease(nil) }

// ResetAndRelease is Reset, calling release (if not nil) for each packet
// discarded.
func (q *CoDel) ResetAndRelease(release func(Meta)) {
	q.hb.discard(release)
	for q.q.len() > 0 {
		m := q.q.pop()
		if release != nil {
			release(m)
		}
	}
	q.v = codelVars{}
}
