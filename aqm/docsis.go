package aqm

// docsis: the DOCSIS 3.1 Low Latency dual queue (CableLabs
// CM-SP-MULPIv3.1 Annexes M-P, as RFC 9957 §1-2 summarises it): a
// coupled DualQ whose L-queue has an "immediate" native AQM — a ramp of
// the marking probability from MINTH to MAXTH of queue delay — and whose
// arrivals pass Queue Protection (qprot.go), which sends packets of flows
// that build the L-queue to the C-queue.
//
// What is reused and what is not:
//   - The coupled machinery is DualPI2's (dualpi2.go): the same two rings,
//     limits, WRR scheduler (DOCSIS weights the L-queue 230/256, i.e. the
//     C-queue gets ≈ 10 %, DualPI2's classic_protection 10) and coupling
//     p_CL = min(k·p', 1) with k = 2 (DOCSIS's default coupling factor 20
//     in tenths).
//   - The Classic AQM is DOCSIS-PIE by default (docsispie.go, RFC 8034):
//     it sets p_C, decided at enqueue, and p' = √p_C for the coupling.
//     DOCSISClassicPI2 keeps DualPI2's PI2 instead (p_C = p'², its gains,
//     decided where DualPI2 decides). Both use DOCSIS's Classic latency
//     target, 10 ms, and the 16 ms update interval.
//   - The L-queue AQM is DOCSIS's: p_L = max(ramp(qdelay), min(k·p', 1))
//     decided at enqueue as DOCSIS's IAQM does, with the ramp
//     MINTH = max(MAXTH − 2^LG_RANGE ns, FLOOR), MAXTH 1 ms, LG_RANGE 19
//     (a 524 µs ramp from 476 µs). Packets in the L-queue are DualPI2's
//     LLLL class, so DualPI2's own step AQM never touches them.
//   - NQB (RFC 9956 §5.2, DOCSIS's default ASF classifiers): DSCP 45 goes
//     to the L-queue too, when the NQB option is on.
//
// "qdelay", the input of the ramp and of Queue Protection, is as in
// DOCSIS the L-queue's byte length (this packet included) over the
// service flow's maximum rate, DOCSISConfig.Rate, which the caller sets
// from the link's rate (the queue never measures time itself). It also
// sets FLOOR, the lowest MINTH: two maximum-size frames at that rate.
//
// Deliberate differences from DOCSIS, each commented where it lives:
//   - without a Rate (0: a varying link), qdelay is the L-queue head's
//     sojourn when the packet arrives, which lags the backlog by about
//     one sojourn;
//   - marking rolls are random (DualPI2's source), where DOCSIS's IAQM
//     uses a deterministic accumulator.

import (
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
)

// DOCSISConfig is the docsis queue's configuration.
type DOCSISConfig struct {
	// DualPI2 is the coupled core: limit, memlimit, Classic target and
	// tupdate, gains, coupling, classic_protection, MTU, ECN mask. Its
	// step parameters are unused (the L-queue AQM is the ramp below).
	DualPI2 Config
	MaxTh   int64  // ns: MAXTH, where the ramp reaches probability 1
	LgRange uint8  // log2 of the ramp's width in ns (LG_RANGE)
	Rate    uint64 // bits/s: the service flow's maximum rate (qdelay = bytes/rate); 0: unknown
	Floor   int64  // ns: a lowest MINTH besides DOCSISFloor(Rate); 0 for none
	NQB     bool   // DSCP 45 uses the L-queue (RFC 9956)
	QProt   QProtConfig
	// Classic is the C-queue's AQM: DOCSISClassicPIE (DOCSIS-PIE, the
	// default) or DOCSISClassicPI2 (DualPI2's PI2 and gains).
	Classic string
	PIE     DOCSISPIEConfig // DOCSIS-PIE's gains and burst allowance
}

// DOCSIS defaults.
const (
	DefaultDOCSISTarget  = 10_000_000 // ns: DOCSIS Classic AQM latency target
	DefaultDOCSISMaxTh   = 1_000_000  // ns
	DefaultDOCSISLgRange = 19         // 2^19 ns ≈ 524 µs
	// maxDOCSISMaxTh: DOCSIS caps MAXTH at 65535 µs.
	maxDOCSISMaxTh = 65_535_000
	// docsisMaxFrame is DOCSIS's MAX_FRAME_SIZE (bytes) for FLOOR.
	docsisMaxFrame = 2000
)

// DefaultDOCSISConfig returns the DOCSIS defaults on DualPI2's machinery:
// DOCSIS-PIE as the Classic AQM with RFC 8034's gains, target 10 ms,
// tupdate 16 ms, coupling 2, L weight ≈ 90 % (classic_protection 10),
// ramp MAXTH 1 ms over 2^19 ns, no floor, NQB off, Queue Protection on
// with RFC 9957's defaults.
func DefaultDOCSISConfig() DOCSISConfig {
	c := DefaultConfig()
	c.Target = DefaultDOCSISTarget
	return DOCSISConfig{
		DualPI2: c,
		MaxTh:   DefaultDOCSISMaxTh,
		LgRange: DefaultDOCSISLgRange,
		QProt:   DefaultQProtConfig(),
		Classic: DOCSISClassicPIE,
		PIE:     DefaultDOCSISPIEConfig(),
	}
}

// DOCSISFloor is DOCSIS's FLOOR for a link of the given rate: the time
// two maximum-size frames take, capped at 65.535 ms.
func DOCSISFloor(bitsPerSecond uint64) int64 {
	if bitsPerSecond == 0 {
		return 0
	}
	return int64(min(uint64(2*8*docsisMaxFrame)*1_000_000_000/bitsPerSecond, maxDOCSISMaxTh))
}

// Validate checks the coupled core, the ramp and Queue Protection.
func (c DOCSISConfig) Validate() error {
	if err := c.DualPI2.Validate(); err != nil {
		return err
	}
	if c.Classic != DOCSISClassicPIE && c.Classic != DOCSISClassicPI2 {
		return fmt.Errorf("docsis classic AQM %q: want pie or pi2", c.Classic)
	}
	rows := []ConfigError{
		{"maxth", c.MaxTh, 1000, maxDOCSISMaxTh, UnitNanos},
		{"lg_range", int64(c.LgRange), 0, 25, ""},
		{"floor", c.Floor, 0, maxDOCSISMaxTh, UnitNanos},
		{"rate", int64(min(c.Rate, math.MaxInt64)), 0, 1 << 44, ""},
	}
	rows = append(rows, c.QProt.ranges()...)
	return checkRanges(append(rows, c.PIE.ranges()...))
}

// ramp returns MINTH and the ramp width (ns) in force: MINTH =
// max(MAXTH − range, FLOOR), and MAXTH = MINTH + range capped at 65.535 ms.
func (c DOCSISConfig) ramp() (minTh, width int64) {
	width = 1 << c.LgRange
	minTh = max(c.MaxTh-width, c.Floor, DOCSISFloor(c.Rate))
	if minTh+width > maxDOCSISMaxTh {
		width = max(maxDOCSISMaxTh-minTh, 1)
	}
	return minTh, width
}

// DOCSIS is the DOCSIS low-latency dual queue. It implements Queue.
type DOCSIS struct {
	cfg          DOCSISConfig
	pi           *DualPI2
	minTh, width int64
	criticalQL   int64 // ns: QProt's CRITICALqL in force
	qp           qprot
	pie          docsisPIE // the Classic AQM when cfg.Classic is pie
	lBytes       uint64    // L-queue bytes sent since the last update (r_L)
}

var _ Queue = (*DOCSIS)(nil)

// NewDOCSIS returns an empty DOCSIS queue; rng supplies every roll.
func NewDOCSIS(cfg DOCSISConfig, rng *rand.Rand) (*DOCSIS, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	pi, err := NewDualPI2(cfg.DualPI2, rng)
	if err != nil {
		return nil, err
	}
	q := &DOCSIS{pi: pi, qp: newQProt(cfg.QProt)}
	q.apply(cfg)
	return q, nil
}

func (q *DOCSIS) apply(cfg DOCSISConfig) {
	q.cfg = cfg
	q.minTh, q.width = cfg.ramp()
	q.pie.cfg, q.pie.target, q.pie.interval = cfg.PIE, cfg.DualPI2.Target, cfg.DualPI2.Tupdate
	// Under DOCSIS-PIE the coupled core's PI2 leaves the C-queue alone;
	// p' is √p_C, set by each update.
	q.pi.externalClassic = cfg.Classic == DOCSISClassicPIE
	if cfg.QProt.BISize != q.qp.cfg.BISize {
		q.qp = newQProt(cfg.QProt)
	}
	q.qp.cfg = cfg.QProt
	if q.qp.cfg.CriticalQL == 0 {
		// CRITICALqL defaults to MAXTH, as in force after FLOOR.
		q.qp.cfg.CriticalQL = q.minTh + q.width
	}
}

// qdelay is the L-queue delay an arriving packet of size bytes meets:
// the L backlog with it over Rate, or without a Rate the head's sojourn.
func (q *DOCSIS) qdelay(size int, now int64) int64 {
	if q.cfg.Rate == 0 {
		return headDelay(&q.pi.l, now)
	}
	return int64(uint64(q.pi.l.bytes+size) * 8 * 1_000_000_000 / q.cfg.Rate)
}

// Config returns the configuration in force.
func (q *DOCSIS) Config() DOCSISConfig { return q.cfg }

// Change applies a new configuration (the coupled core as DualPI2.Change;
// Queue Protection's buckets are kept unless their number changes).
func (q *DOCSIS) Change(cfg DOCSISConfig, now int64, drop func(Meta)) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	// Updates due run under the old configuration (DualPI2.Change runs
	// PI2's; with DOCSIS-PIE they have already run here).
	q.Advance(now)
	if err := q.pi.Change(cfg.DualPI2, now, drop); err != nil {
		return err
	}
	if cfg.Classic != q.cfg.Classic {
		// DOCSIS-PIE starts afresh; PI2 goes on from the p' it finds.
		q.pie.reset()
		if cfg.Classic == DOCSISClassicPIE {
			q.pi.prob = 0
		}
	}
	q.apply(cfg)
	return nil
}

// probNative is the ramp: 0 at or below MINTH, MaxProb at or above
// MINTH + width, linear between.
func (q *DOCSIS) probNative(qdelay int64) uint32 { return rampProb(qdelay, q.minTh, q.width) }

func rampProb(qdelay, minTh, width int64) uint32 {
	d := qdelay - minTh
	switch {
	case d <= 0:
		return 0
	case d >= width:
		return MaxProb
	}
	return uint32(uint64(d) * MaxProb / uint64(width))
}

// isL reports whether m is for the L-queue: its ECN codepoint matches the
// ECN mask (ECT(1) and CE by default), or NQB is on and it carries DSCP 45.
func (q *DOCSIS) isL(m *Meta) bool {
	return uint8(m.ECN)&q.cfg.DualPI2.ECNMask != 0 || (q.cfg.NQB && m.DSCP == DSCPNQB)
}

// Enqueue classifies m; an L-queue packet passes Queue Protection (a
// sanctioned one joins the C-queue and is Classic from then on) and then
// the L-queue AQM, p_L = max(ramp, k·p'), whose mark is reported at
// dequeue (a Not-ECT NQB packet is dropped instead).
func (q *DOCSIS) Enqueue(m Meta, now int64) Verdict {
	m.Len = max(m.Len, 0)
	m.applyStep, m.earlyMark, m.sanctioned = false, ReasonNone, false
	if !q.isL(&m) {
		return q.enqueueClassic(m, now)
	}
	qdelay := q.qdelay(int(m.Len), now)
	pn := q.probNative(qdelay)
	if q.cfg.QProt.On && q.qp.protect(&m, qdelay, pn, now) {
		m.sanctioned = true
		return q.enqueueClassic(m, now)
	}
	p, why := q.lProb(pn)
	if p > 0 && q.pi.roll(p) {
		if m.ECN == NotECT {
			q.pi.countDrop(LLLL, why)
			return Verdict{Action: Drop, Reason: why, Class: LLLL}
		}
		q.pi.st.ECNMark++
		m.earlyMark = why
	}
	return q.pi.enqueueAs(m, LLLL, now)
}

// enqueueClassic queues m in the C-queue; under DOCSIS-PIE it first meets
// drop_early, which drops it or, if it is ECN-capable and p_C is at most
// 10 %, marks it (reported at dequeue): above 10 % ECN-capable packets are
// dropped too, counted as overload (RFC 8033 §5.1's rule, so that
// unresponsive ECN traffic cannot take the queue). Under PI2 the coupled
// core decides, as DualPI2 does.
func (q *DOCSIS) enqueueClassic(m Meta, now int64) Verdict {
	if q.cfg.Classic == DOCSISClassicPIE && q.pie.dropEarly(int(m.Len), q.pi.c.bytes, q.belowThird(now), q.pi.roll) {
		why := ReasonNone
		switch {
		case m.ECN == NotECT:
			why = ReasonClassic
		case q.pie.dropProb*10 > dpOne:
			why = ReasonOverload
		}
		if why != ReasonNone {
			q.pi.countDrop(Classic, why)
			return Verdict{Action: Drop, Reason: why, Class: Classic}
		}
		q.pi.st.ECNMark++
		m.earlyMark = ReasonClassic
	}
	return q.pi.enqueueAs(m, Classic, now)
}

// belowThird reports whether the C-queue holds under a third of
// BUFFER_SIZE (TargetBuffer at Rate), where DOCSIS-PIE stays off until a
// burst starts; without a Rate, whether its head sojourn is under a third
// of TargetBuffer.
func (q *DOCSIS) belowThird(now int64) bool {
	if q.cfg.Rate == 0 {
		return 3*headDelay(&q.pi.c, now) < q.cfg.PIE.TargetBuffer
	}
	buffer := mulDiv(q.cfg.Rate, uint64(q.cfg.PIE.TargetBuffer), 8*1_000_000_000)
	return 3*uint64(q.pi.c.bytes) < buffer
}

// classicQdelay is DOCSIS-PIE's delay estimate for the C-queue at an
// update: its bytes over the rate left to it, r_C = Rate − r_L, with r_L
// the L-queue's rate over the last interval capped at its WRR share (the
// coupled form DOCSIS uses and docsis-ns3 models). Without a Rate it is
// the C-queue head's sojourn.
func (q *DOCSIS) classicQdelay(now int64) int64 {
	if q.cfg.Rate == 0 {
		return headDelay(&q.pi.c, now)
	}
	rL := min(mulDiv(q.lBytes*8, 1_000_000_000, uint64(q.cfg.DualPI2.Tupdate)), q.cfg.Rate*uint64(q.pi.wl)/maxWeight)
	rC := max(q.cfg.Rate-rL, 1)
	return int64(min(mulDiv(uint64(q.pi.c.bytes)*8, 1_000_000_000, rC), dpMaxQdelay))
}

// mulDiv is a·b/c (c > 0) without overflow in between, saturated at
// math.MaxUint64.
func mulDiv(a, b, c uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	if hi >= c {
		return math.MaxUint64
	}
	v, _ := bits.Div64(hi, lo, c)
	return v
}

// lProb is the L-queue's marking probability p_L = max(ramp, min(k·p',
// 1)) for the ramp's pn, with the reason of the larger; p' is √p_C under
// DOCSIS-PIE, so the coupled part is min(k·√p_C, 1).
func (q *DOCSIS) lProb(pn uint32) (uint32, Reason) {
	pCL := uint64(q.pi.prob) * uint64(q.cfg.DualPI2.Coupling)
	if pCL > uint64(pn) {
		return uint32(min(pCL, MaxProb)), ReasonCoupled
	}
	return pn, ReasonRamp
}

// Dequeue is DualPI2's (WRR between the queues; under PI2, p'² in the
// C-queue); a sanctioned packet that leaves unmarked carries the reason
// "sanction".
func (q *DOCSIS) Dequeue(now int64) (Meta, Verdict, bool) {
	m, v, ok := q.pi.Dequeue(now)
	if ok && v.Class != Classic && v.Action != Drop {
		q.lBytes += uint64(max(m.Len, 0))
	}
	if ok && m.sanctioned {
		m.sanctioned = false
		if v.Action == Pass {
			v.Reason = ReasonSanction
		}
	}
	return m, v, ok
}

// Advance runs the Classic AQM's updates due, on DualPI2's schedule
// (every tupdate from creation): PI2's, or DOCSIS-PIE's, each of which
// sets p' = √p_C for the coupling.
func (q *DOCSIS) Advance(now int64) {
	if q.cfg.Classic != DOCSISClassicPIE {
		q.pi.Advance(now)
		return
	}
	tu := q.cfg.DualPI2.Tupdate
	for q.pi.next <= now {
		if q.pi.c.len() == 0 && q.lBytes == 0 && q.pie.idle() {
			// An empty C-queue at rest: every update is a no-op.
			steps := (now-q.pi.next)/tu + 1
			if steps > (math.MaxInt64-q.pi.next)/tu {
				q.pi.next = math.MaxInt64
			} else {
				q.pi.next += steps * tu
			}
			return
		}
		q.pie.update(q.classicQdelay(q.pi.next))
		q.lBytes = 0
		q.pi.prob = q.pie.baseProb()
		q.pi.next += tu
	}
}

// NextUpdate returns when the next PI update is due.
func (q *DOCSIS) NextUpdate() int64 { return q.pi.NextUpdate() }

// Len returns the packets and bytes in both queues.
func (q *DOCSIS) Len() (pkts, bytes int) { return q.pi.Len() }

// Prob returns the base probability p' (raw, MaxProb ≙ 1): √p_C under
// DOCSIS-PIE.
func (q *DOCSIS) Prob() uint32 { return q.pi.Prob() }

// Stats returns DualPI2's counters (marks by the ramp count in ECNMark
// and L.Marked; StepMarks stays 0), Queue Protection's in QProt and the
// Classic AQM's in DOCSISClassic.
func (q *DOCSIS) Stats(now int64) Stats {
	s := q.pi.Stats(now)
	s.Kind = KindDOCSIS
	s.QProt = q.qp.st
	x := &s.DOCSISClassic
	x.AQM = q.cfg.Classic
	if q.cfg.Classic == DOCSISClassicPIE {
		x.ProbC = uint64(q.pie.dropProb)
		x.QDelay = q.pie.qdelay
		x.BurstAllowance = q.pie.allowance
		x.BurstState = q.pie.state.String()
	} else {
		x.ProbC = uint64(q.pi.prob) * uint64(q.pi.prob) >> 32 // p'²
	}
	return s
}

// Reset empties both queues as DualPI2.Reset does, handing the packets to
// release; Queue Protection's scores are kept (they age out).
func (q *DOCSIS) Reset() { q.ResetAndRelease(nil) }

// ResetAndRelease is Reset, calling release (if not nil) for each packet
// discarded.
func (q *DOCSIS) ResetAndRelease(release func(Meta)) {
	q.pie.reset()
	q.lBytes = 0
	q.pi.ResetAndRelease(func(m Meta) {
		m.sanctioned = false
		if release != nil {
			release(m)
		}
	})
}
