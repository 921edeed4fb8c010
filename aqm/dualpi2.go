package aqm

// DualPI2: the DualQ Coupled PI2 AQM of RFC 9332, with the semantics of
// Linux 6.18 net/sched/sch_dualpi2.c. This file follows the kernel file's
// order so the two can be read side by side: constants and units, state,
// marking helpers, classification, enqueue, dequeue with the step AQM, the
// probability update, configuration changes.
//
// Deliberate differences from the kernel, each commented where it lives:
//   - time is injected: the PI update runs from Advance at tupdate,
//     2·tupdate, ... instead of an hrtimer re-armed to now+tupdate;
//   - the PI arithmetic saturates where the kernel catches only a single
//     32-bit wrap (calculateProbability);
//   - memlimit counts bytes of packet data (Meta.Len), not skb truesize;
//   - no GSO (each Meta is one packet) and no tc filters or skb->priority:
//     Meta.Class plays the filter's role;
//   - the MTU of the 2-MTU guard and of the WRR credit is Config.MTU (the
//     IP MTU, 1500 by default) where the kernel uses dev mtu + link header;
//   - queue delays are read from the real heads of the rings rather than
//     from head timestamps with 0 meaning "empty" (so a packet may arrive at
//     time 0, and a change() drop cannot leave a stale head timestamp);
//   - the packets Reset discards can be handed back (ResetAndRelease).

import (
	"errors"
	"math"
	"math/bits"
	"math/rand/v2"
)

// MaxProb is the raw probability that means 1.0 (the kernel's MAX_PROB,
// U32_MAX): 32 bits let the coupled probability resolve congestion windows
// up to billions of packets.
const MaxProb = math.MaxUint32

const (
	// alphaBetaShift: netlink alpha/beta are in Hz·256 (1/256 Hz units).
	alphaBetaShift = 8
	// alphaBetaGranularity: internal alpha/beta are per 64 ns of delay, so
	// that scaling the smallest netlink value, 1, does not round to 0.
	alphaBetaGranularity = 6
	alphaBetaScaling     = alphaBetaShift - alphaBetaGranularity
	// maxAlphaBeta is the largest netlink alpha/beta (2^31-1): scaled
	// values then fit in 32 bits.
	maxAlphaBeta = 1<<31 - 1
	// maxWeight: classic_protection and its complement are percentages.
	maxWeight = 100
)

// GainFromHz converts a PI gain in Hz to netlink units as tc sends it:
// trunc(Hz·256), which sch_dualpi2's policy takes in 1..2^31-1; ok is
// false outside that range (or for NaN).
func GainFromHz(hz float64) (nl uint32, ok bool) {
	v := math.Trunc(hz * (1 << alphaBetaShift))
	if math.IsNaN(hz) || v < 1 || v > maxAlphaBeta {
		return 0, false
	}
	return uint32(v), true
}

// MaxGainHz is the largest gain GainFromHz accepts, in whole Hz.
const MaxGainHz = maxAlphaBeta >> alphaBetaShift

// ScaleGain converts a netlink alpha or beta (Hz·256) to the kernel's
// internal gain: floor(floor(nl·MaxProb / 4) / 1e9), probability per 64 ns
// of delay per update (41 → 44, 819 → 879).
func ScaleGain(nl uint32) uint32 {
	return uint32(uint64(nl) * MaxProb >> alphaBetaScaling / 1e9)
}

// UnscaleGain converts an internal gain back to netlink units as the
// kernel dumps it: floor(floor(g·1e9·4) / MaxProb). The round trip is
// lossy (41 → 44 → 40, shown by tc as 0.156250).
func UnscaleGain(internal uint32) uint32 {
	return uint32(uint64(internal) * 1e9 << alphaBetaScaling / MaxProb)
}

// GainHz is a netlink alpha/beta in Hz, as tc prints it.
func GainHz(nl uint32) float64 { return float64(nl) / (1 << alphaBetaShift) }

// DualPI2 is the dual-queue coupled AQM. It implements Queue.
type DualPI2 struct {
	cfg Config
	rng *rand.Rand

	// PI2 (RFC 9332 §2)
	alpha      uint32 // integral gain, probability per 64 ns of delay error
	beta       uint32 // proportional gain, probability per 64 ns of delay change
	prob       uint32 // base probability p', MaxProb ≙ 1
	lastQdelay int64  // queue delay at the last update, ns
	next       int64  // time of the next PI update, ns

	// externalClassic: the C-queue's AQM is the caller's (docsis's
	// DOCSIS-PIE), so the PI verdict leaves Classic packets alone.
	externalClassic bool

	// C-queue starvation protection (WRR credit, bytes·percent)
	credit     int64 // > 0: the C-queue is served next
	creditInit int64 // MTU·(wc − wl): negative ⇒ the L-queue goes first
	wc, wl     int64 // weights, percent, wc + wl = 100

	c, l   ring   // Classic queue; L queue (L4S and LLLL)
	memory uint64 // bytes of packet data in both queues

	st Stats // counters; Stats fills in the rest
}

var _ Queue = (*DualPI2)(nil)

// NewDualPI2 returns an empty DualPI2 with the PI update due first at
// cfg.Tupdate (time 0 is the queue's creation). rng supplies every
// mark/drop roll; pass a seeded one for repeatable runs.
func NewDualPI2(cfg Config, rng *rand.Rand) (*DualPI2, error) {
	if rng == nil {
		return nil, errors.New("dualpi2: a random source is required (got nil *rand.Rand)")
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	q := &DualPI2{rng: rng, next: cfg.Tupdate}
	q.apply(cfg)
	q.credit = q.creditInit
	return q, nil
}

// ---- marking helpers -------------------------------------------------

// roll returns true with probability (p+1)/2^32: the kernel's
// get_random_u32() <= p, so even p = 0 fires once in 2^32.
func (q *DualPI2) roll(p uint32) bool { return q.rng.Uint32() <= p }

// mark counts a CE mark on an ECN-capable packet (CE included: setting CE
// on CE succeeds and counts, as INET_ECN_set_ce). Not-ECT cannot be marked.
func (q *DualPI2) mark(m *Meta, why Reason) (Action, Reason) {
	if m.ECN == NotECT {
		return Pass, ReasonNone
	}
	q.st.ECNMark++
	return Mark, why
}

// classicMarking applies p_C = p'² to a C-queue packet as two independent
// rolls against p' (the coupling of RFC 9332 §2.1, squared by drawing
// twice rather than multiplying). Not-ECT, and every packet while
// overloaded (ECN is then disabled, RFC 9332 §4.2.3), is dropped instead
// of marked.
func (q *DualPI2) classicMarking(m *Meta, prob uint32, overload bool) (Action, Reason) {
	if !(q.roll(prob) && q.roll(prob)) {
		return Pass, ReasonNone
	}
	switch {
	case m.ECN == NotECT:
		return Drop, ReasonClassic
	case overload:
		return Drop, ReasonOverload
	}
	return q.mark(m, ReasonClassic)
}

// scalableMarking applies p_CL = k·p' to an L4S packet (RFC 9332 §2.1).
// Overload means k·p' > 1: with drop_on_overload a packet is then dropped
// with p'² like a Classic one and every survivor is CE-marked (the coupled
// probability is saturated at 1); in overflow mode p' is capped at 1/k so
// overload only remains possible until the next update after a change.
// A Not-ECT packet (classified L4S by Meta.Class) is dropped where an ECT
// one would be marked.
func (q *DualPI2) scalableMarking(m *Meta, lprob uint64, prob uint32, overload bool) (Action, Reason) {
	if overload {
		if q.cfg.DropOverload && q.roll(prob) && q.roll(prob) {
			return Drop, ReasonOverload
		}
		return q.mark(m, ReasonCoupled)
	}
	// lprob <= MaxProb here, so it fits in 32 bits.
	if !q.roll(uint32(lprob)) {
		return Pass, ReasonNone
	}
	if m.ECN == NotECT {
		return Drop, ReasonCoupled
	}
	return q.mark(m, ReasonCoupled)
}

// piVerdict is the kernel's must_drop: the PI-driven decision for m, at
// dequeue (backlog after removing m) or at enqueue (backlog without m).
// Below 2 MTU of backlog bytes there is no PI action at all, so a small
// standing queue is never marked or dropped (a kernel heuristic, not in
// the RFC pseudocode). LLLL is never touched.
func (q *DualPI2) piVerdict(m *Meta) (Action, Reason) {
	if q.c.bytes+q.l.bytes < 2*q.cfg.MTU {
		return Pass, ReasonNone
	}
	prob := q.prob
	lprob := uint64(prob) * uint64(q.cfg.Coupling)
	overload := lprob > MaxProb
	switch m.Class {
	case Classic:
		if q.externalClassic {
			return Pass, ReasonNone
		}
		return q.classicMarking(m, prob, overload)
	case L4S:
		return q.scalableMarking(m, lprob, prob, overload)
	}
	return Pass, ReasonNone
}

// ---- classification ----------------------------------------------------

// classify sorts a packet as dualpi2_skb_classify does: an ECN codepoint
// matching the ECN mask means L4S (RFC 9331 §5.1: ECT(1) and CE by
// default); otherwise Meta.Class decides, standing in for skb->priority
// and tc filters (no match ⇒ Classic; values beyond LLLL ⇒ Classic).
func (q *DualPI2) classify(m *Meta) Class {
	if uint8(m.ECN)&q.cfg.ECNMask != 0 {
		return L4S
	}
	// NQB (RFC 9956 §5.2): DSCP 45 shares the L-queue and its AQM.
	if q.cfg.NQB && m.DSCP == DSCPNQB {
		return L4S
	}
	if m.Class <= LLLL {
		return m.Class
	}
	return Classic
}

// ---- enqueue -----------------------------------------------------------

// Enqueue classifies m, applies the limits and (with drop_enqueue) the PI
// decision, and queues it with Arrival = now. A refused packet gets
// Action Drop with its reason and class. A mark decided here is reported
// when the packet is dequeued.
func (q *DualPI2) Enqueue(m Meta, now int64) Verdict {
	m.Len = max(m.Len, 0)
	m.applyStep, m.earlyMark = false, ReasonNone
	return q.enqueueAs(m, q.classify(&m), now)
}

// enqueueAs is Enqueue with the class already decided (docsis's Queue
// Protection overrides the ECN classification); an earlyMark already set
// is kept (docsis's L-queue ramp decides at enqueue).
func (q *DualPI2) enqueueAs(m Meta, class Class, now int64) Verdict {
	m.Class = class
	qlen := q.c.len() + q.l.len()

	// Tail drop at the packet limit or the memory limit. Deliberate
	// difference: memory is packet bytes (Meta.Len), not skb truesize.
	if qlen >= int(q.cfg.Limit) || q.memory+uint64(m.Len) > q.cfg.MemLimit {
		q.st.Overlimits++
		q.countDrop(m.Class, ReasonLimit)
		return Verdict{Action: Drop, Reason: ReasonLimit, Class: m.Class}
	}
	if q.cfg.DropEnqueue {
		act, why := q.piVerdict(&m)
		if act == Drop {
			q.countDrop(m.Class, why)
			return Verdict{Action: Drop, Reason: why, Class: m.Class}
		}
		if act == Mark {
			m.earlyMark = why
		}
	}

	m.Arrival = now
	q.memory += uint64(m.Len)
	q.st.MaxMemoryUsed = max(q.st.MaxMemoryUsed, q.memory)
	q.st.MaxQ = max(q.st.MaxQ, uint32(min(uint64(qlen), math.MaxUint32)))
	if m.Class == Classic {
		q.st.PktsInC++
		q.st.C.Enqueued++
		q.c.push(m)
	} else {
		// The step AQM applies to L4S packets that found at least
		// min_qlen_step packets in the L-queue; never to LLLL.
		m.applyStep = m.Class == L4S && q.l.len() >= int(q.cfg.MinQlenStep)
		q.st.PktsInL++
		q.st.L.Enqueued++
		q.l.push(m)
	}
	return Verdict{Class: m.Class}
}

// ---- dequeue and step AQM ---------------------------------------------

// Dequeue is the kernel's dequeue loop (dualpi2_qdisc_dequeue), one
// packet per call: pick a queue by WRR credit, then the PI decision
// (must_drop, unless drop_enqueue), then, in the L-queue, the step AQM,
// and only for a packet that is sent, the credit change. A dropped packet
// is returned with Action Drop and leaves the credit as it was; the caller
// calls Dequeue again, as the kernel's loop retries.
func (q *DualPI2) Dequeue(now int64) (Meta, Verdict, bool) {
	from, weight := q.pick()
	if from == nil {
		q.credit = q.creditInit // both queues empty: MTU·(wc − wl) again
		return Meta{}, Verdict{}, false
	}
	m := from.pop()
	q.memory -= uint64(m.Len)
	creditChange := weight * int64(m.Len)

	act, why := Pass, ReasonNone
	if m.earlyMark != ReasonNone {
		act, why = Mark, m.earlyMark
	}
	if !q.cfg.DropEnqueue {
		a, r := q.piVerdict(&m)
		if a == Drop {
			return q.dropAtDequeue(m, r)
		}
		if a == Mark {
			act, why = Mark, r
		}
	}
	if m.Class != Classic && q.stepFires(&m, now) {
		if m.ECN == NotECT {
			return q.dropAtDequeue(m, ReasonStep)
		}
		// A packet already PI-marked is counted again, as the kernel's
		// second INET_ECN_set_ce on CE succeeds; the verdict names the step.
		q.st.ECNMark++
		q.st.StepMarks++
		act, why = Mark, ReasonStep
	}

	q.credit += creditChange
	cc := q.counters(m.Class)
	cc.Sent++
	cc.Bytes += uint64(m.Len)
	q.st.SentPackets++
	q.st.SentBytes += uint64(m.Len)
	if act == Mark {
		cc.Marked++
	}
	m.applyStep, m.earlyMark = false, ReasonNone
	return m, Verdict{Action: act, Reason: why, Class: m.Class}, true
}

// pick is the WRR choice of the kernel's dequeue_packet: the queue to
// serve next and the credit it earns per byte served, which Dequeue
// applies only if the packet is sent (the kernel's "classic_protection").
// With both queues backlogged the L-queue is served while credit <= 0;
// serving L adds wc per byte, serving C subtracts wl, so C gets about wc%
// of the bytes (RFC 9332 suggests WRR for this). With one queue empty the
// weight is 0, so the credit is frozen. from is nil when both are empty.
func (q *DualPI2) pick() (from *ring, weight int64) {
	nL, nC := q.l.len(), q.c.len()
	switch {
	case nL > 0 && (nC == 0 || q.credit <= 0):
		if nC > 0 {
			return &q.l, q.wc
		}
		return &q.l, 0
	case nC > 0:
		if nL > 0 {
			return &q.c, -q.wl
		}
		return &q.c, 0
	}
	return nil, 0
}

// stepFires is the kernel's do_step_aqm test: the L4S native AQM, a step
// where the RFC pseudocode has a ramp, on the packet's own
// sojourn, or on the packets left in the L-queue after it, strictly above
// step_thresh. Not gated by the 2-MTU rule.
func (q *DualPI2) stepFires(m *Meta, now int64) bool {
	if !m.applyStep {
		return false
	}
	d := now - m.Arrival
	if q.cfg.StepInPackets {
		d = int64(q.l.len())
	}
	return d > q.cfg.StepThresh
}

func (q *DualPI2) dropAtDequeue(m Meta, why Reason) (Meta, Verdict, bool) {
	q.countDrop(m.Class, why)
	m.applyStep, m.earlyMark = false, ReasonNone
	return m, Verdict{Action: Drop, Reason: why, Class: m.Class}, true
}

func (q *DualPI2) countDrop(c Class, why Reason) {
	q.st.Dropped++
	q.st.DropsBy[why]++
	q.counters(c).Dropped++
}

func (q *DualPI2) counters(c Class) *ClassCounters {
	if c == Classic {
		return &q.st.C
	}
	return &q.st.L
}

// ---- probability update ------------------------------------------------

// Advance runs every PI update due at or before now, each at its own time
// (tupdate, 2·tupdate, ... after creation). Deliberate difference: the
// kernel re-arms its timer to now+tupdate inside the handler, so a late
// timer shifts its schedule; here the schedule is fixed, so live runs,
// replay and tests share one trajectory.
func (q *DualPI2) Advance(now int64) {
	for q.next <= now {
		if q.idleFixedPoint() {
			// Nothing queued, p' = 0 and no delay history: every update
			// leaves the state as it is, so jump over them at once.
			steps := (now-q.next)/q.cfg.Tupdate + 1
			if steps > (math.MaxInt64-q.next)/q.cfg.Tupdate {
				q.next = math.MaxInt64 // beyond any time a caller can pass
			} else {
				q.next += steps * q.cfg.Tupdate
			}
			return
		}
		q.prob = q.calculateProbability(q.next)
		q.next += q.cfg.Tupdate
	}
}

func (q *DualPI2) idleFixedPoint() bool {
	return q.c.len() == 0 && q.l.len() == 0 && q.prob == 0 && q.lastQdelay == 0
}

// NextUpdate returns when the next PI update is due.
func (q *DualPI2) NextUpdate() int64 { return q.next }

// headDelay is the sojourn at now of a ring's head, 0 when empty.
func headDelay(r *ring, now int64) int64 {
	if r.len() == 0 {
		return 0
	}
	return max(now-r.front().Arrival, 0)
}

// calculateProbability is one PI2 update at time now (RFC 9332 Appendix
// A.2, in the kernel's integer form):
//
//	q      = max(C head sojourn, L head sojourn)
//	delta  = (q − target)·alpha + (q − q_last)·beta     (per 64 ns)
//	p'    += delta / 64, clamped to [0, MaxProb], and to MaxProb/k in
//	         overflow mode so that k·p' never exceeds 1.
//
// Deliberate difference: the kernel computes delta in s64 and catches only
// a single 32-bit wrap of p' + delta/64, so a delay change of more than a
// few seconds between updates (|delta|/64 >= 2^32) can wrap p'; here every
// step saturates, so p' goes to MaxProb or 0 instead.
func (q *DualPI2) calculateProbability(now int64) uint32 {
	qdelay := max(headDelay(&q.c, now), headDelay(&q.l, now))
	delta := addSat(mulSat(qdelay-q.cfg.Target, q.alpha), mulSat(qdelay-q.lastQdelay, q.beta))
	q.lastQdelay = qdelay

	p := q.prob
	if delta > 0 {
		inc := uint64(delta) >> alphaBetaGranularity
		if inc >= uint64(MaxProb-p) {
			p = MaxProb
		} else {
			p += uint32(inc)
		}
	} else {
		dec := uint64(-delta) >> alphaBetaGranularity
		if dec >= uint64(p) {
			p = 0
		} else {
			p -= uint32(dec)
		}
	}
	if !q.cfg.DropOverload {
		p = min(p, MaxProb/uint32(q.cfg.Coupling))
	}
	return p
}

// mulSat returns d·g, saturated to ±math.MaxInt64.
func mulSat(d int64, g uint32) int64 {
	u := uint64(d)
	if d < 0 {
		u = -u
	}
	hi, lo := bits.Mul64(u, uint64(g))
	if hi != 0 || lo > math.MaxInt64 {
		lo = math.MaxInt64
	}
	if d < 0 {
		return -int64(lo)
	}
	return int64(lo)
}

// addSat returns a+b, saturated to ±math.MaxInt64.
func addSat(a, b int64) int64 {
	s := a + b
	switch {
	case a > 0 && b > 0 && s < 0:
		return math.MaxInt64
	case a < 0 && b < 0 && s >= 0:
		return -math.MaxInt64
	}
	return s
}

// ---- configuration, change, reset, statistics ---------------------------

// apply installs cfg (already validated) and derives the internal values.
func (q *DualPI2) apply(cfg Config) {
	protectionChanged := cfg.ClassicProtection != q.cfg.ClassicProtection || cfg.MTU != q.cfg.MTU
	q.cfg = cfg
	q.alpha = ScaleGain(cfg.Alpha)
	q.beta = ScaleGain(cfg.Beta)
	q.wc = int64(cfg.ClassicProtection)
	q.wl = maxWeight - q.wc
	q.creditInit = int64(cfg.MTU) * (q.wc - q.wl)
	if protectionChanged {
		// As dualpi2_calculate_c_protection: new weights restart the credit.
		q.credit = q.creditInit
	}
	want := int(min(cfg.Limit, maxPrealloc))
	q.c.reserve(want)
	q.l.reserve(want)
	q.st.MemoryLimit = cfg.MemLimit
}

// Config returns the configuration in force.
func (q *DualPI2) Config() Config { return q.cfg }

// Change applies a new configuration to a live queue, as tc qdisc change
// does. Updates due up to now run first, under the old configuration; the
// next update stays where it was scheduled and later ones follow the new
// tupdate. If the queue is now over its packet or memory limit, packets
// are dropped from the head of the C-queue first, then the L-queue (Linux
// 6.18), counted as limit drops, and each is passed to drop (may be nil).
// An invalid cfg changes nothing.
func (q *DualPI2) Change(cfg Config, now int64, drop func(Meta)) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	q.Advance(now)
	q.apply(cfg)
	for q.c.len()+q.l.len() > int(cfg.Limit) || q.memory > cfg.MemLimit {
		r := &q.c
		if r.len() == 0 {
			r = &q.l
		}
		m := r.pop()
		q.memory -= uint64(m.Len)
		q.countDrop(m.Class, ReasonLimit)
		if drop != nil {
			m.applyStep, m.earlyMark = false, ReasonNone
			drop(m)
		}
	}
	return nil
}

// Reset empties both queues and clears p', the tc xstats counters (packets
// in, maxq, ECN and step marks, memory use) and restores the WRR credit,
// keeping the configuration, the PI schedule and, like the kernel,
// last_qdelay (so the first update after a reset sees the delay fall). The
// generic counters (sent, dropped, overlimits, per queue) are kept, as the
// kernel's qdisc counters are. Queued packets are discarded silently;
// ResetAndRelease hands them back.
func (q *DualPI2) Reset() { q.ResetAndRelease(nil) }

// ResetAndRelease is Reset, calling release (if not nil) for each packet
// discarded, C-queue first, so the caller can free its buffers.
func (q *DualPI2) ResetAndRelease(release func(Meta)) {
	for _, r := range []*ring{&q.c, &q.l} {
		for r.len() > 0 {
			m := r.pop()
			if release != nil {
				m.applyStep, m.earlyMark = false, ReasonNone
				release(m)
			}
		}
		r.clear()
	}
	q.prob = 0
	q.memory = 0
	q.st.PktsInC, q.st.PktsInL, q.st.MaxQ = 0, 0, 0
	q.st.ECNMark, q.st.StepMarks = 0, 0
	q.st.MaxMemoryUsed = 0
	q.credit = q.creditInit
}

// Len returns the packets and bytes queued in both queues.
func (q *DualPI2) Len() (pkts, bytes int) {
	return q.c.len() + q.l.len(), q.c.bytes + q.l.bytes
}

// Prob returns the current base probability p' (raw, MaxProb ≙ 1).
func (q *DualPI2) Prob() uint32 { return q.prob }

// Stats returns the counters, with the head sojourns measured at now (in
// ns; tc shows them in µs).
func (q *DualPI2) Stats(now int64) Stats {
	s := q.st
	s.Kind = KindDualPI2
	s.Prob = q.prob
	s.DelayC = headDelay(&q.c, now)
	s.DelayL = headDelay(&q.l, now)
	s.Credit = int32(q.credit)
	s.MemoryUsed = q.memory
	s.BacklogPkts, s.BacklogBytes = q.Len()
	return s
}
