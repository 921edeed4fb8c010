package aqm

// PIE: Proportional Integral controller Enhanced (RFC 8033) with the
// semantics of Linux net/sched/sch_pie.c (pie_drop_early,
// pie_process_dequeue, pie_calculate_probability): the kernel's 56-bit
// probability, psched time (64 ns ticks), alpha and beta in 1/16 units,
// the auto-tuning shifts, de-randomisation by accumulated probability, the
// burst allowance and the optional dequeue-rate estimator.
//
// Deliberate differences from the kernel, each commented where it lives:
//   - time is injected: the probability update runs from Advance at
//     500 ms (the kernel's first timer, HZ/2), then every tupdate on a
//     fixed schedule, where the kernel re-arms a jiffies timer to
//     now+tupdate (so tupdate is in ns, not rounded to jiffies);
//   - intervals between dequeues are not truncated to 32 bits;
//   - a mark decided at enqueue is reported when the packet is dequeued.

import (
	"errors"
	"math"
	"math/rand/v2"
)

var errNilRand = errors.New("a random source is required (got nil *rand.Rand)")

// PIEMaxProb is the kernel's MAX_PROB for PIE: 2^56 − 1 ≙ 1.0 (the top 8
// bits of a u64 are left free so that additions cannot overflow).
const PIEMaxProb = math.MaxUint64 >> 8

const (
	psShift          = 6                          // psched time: ns >> 6
	psTicksPerSec    = 1_000_000_000 >> psShift   // 15625000
	pieScale         = 8                          // dequeue-rate fixed point
	pieQueueThresh   = 16384                      // bytes: enough backlog to measure the drain rate
	dqCountInvalid   = math.MaxUint64             // the kernel's DQCOUNT_INVALID (−1 in a u64)
	dtimeInvalid     = math.MaxInt64              // the kernel's DTIME_INVALID
	pieFirstUpdate   = 500_000_000                // ns: pie_init arms the timer at HZ/2
	pieBurst         = 150_000_000 >> psShift     // 150 ms in ticks (pie_vars_init)
	pieHighDelay     = 250_000_000 >> psShift     // 250 ms: non-linear probability increase
	pieMaxAlphaBeta  = 32                         // alpha/beta are 0..32 sixteenths
	pieProbCap       = PIEMaxProb / 10            // ECN marking allowed while prob <= 10 %
	pieAlphaBetaUnit = PIEMaxProb / psTicksPerSec // probability per tick of delay, before >> 4
	pieProbStepLimit = PIEMaxProb / 100 * 2       // at most 2 % more per update above 10 %
)

// PIEConfig holds sch_pie's parameters (tc names in comments; times in ns).
type PIEConfig struct {
	Limit           uint32 // limit: packets
	Target          int64  // target: queue delay reference, ns
	Tupdate         int64  // tupdate: probability update interval, ns
	Alpha           uint32 // alpha: 0..32, in 1/16 (2 ≙ 0.125)
	Beta            uint32 // beta: 0..32, in 1/16 (20 ≙ 1.25)
	ECN             bool   // ecn: mark ECT packets while the probability is at most 10 %
	Bytemode        bool   // bytemode: scale the probability by packet size / MTU
	DQRateEstimator bool   // dq_rate_estimator: queue delay by Little's law instead of timestamps
	MTU             int    // bytes (psched_mtu: 1514); the 2-MTU guard and bytemode use it
}

// Kernel defaults (pie_params_init).
const (
	DefaultPIELimit   = 1000
	DefaultPIETarget  = 15_000_000 // ns
	DefaultPIETupdate = 15_000_000 // ns
	DefaultPIEAlpha   = 2          // 0.125
	DefaultPIEBeta    = 20         // 1.25
)

// DefaultPIEConfig returns sch_pie's defaults: limit 1000, target 15ms,
// tupdate 15ms, alpha 2 (0.125), beta 20 (1.25), noecn, no bytemode, no
// dq_rate_estimator, MTU 1514.
func DefaultPIEConfig() PIEConfig {
	return PIEConfig{
		Limit:   DefaultPIELimit,
		Target:  DefaultPIETarget,
		Tupdate: DefaultPIETupdate,
		Alpha:   DefaultPIEAlpha,
		Beta:    DefaultPIEBeta,
		MTU:     DefaultPschedMTU,
	}
}

// Validate checks the parameters: times as u32 µs as netlink carries
// them, alpha and beta 0..32 as tc accepts, tupdate at least 1 µs (the
// kernel stops its timer at 0).
func (c PIEConfig) Validate() error {
	return checkRanges([]ConfigError{
		{"limit", int64(c.Limit), 1, math.MaxUint32, UnitPackets},
		{"target", c.Target, 0, maxCodelTime, UnitNanos},
		{"tupdate", c.Tupdate, 1000, maxCodelTime, UnitNanos},
		{"alpha", int64(c.Alpha), 0, pieMaxAlphaBeta, ""},
		{"beta", int64(c.Beta), 0, pieMaxAlphaBeta, ""},
		{"mtu", int64(c.MTU), minMTU, maxMTU, ""},
	})
}

// PIE is sch_pie. It implements Queue.
type PIE struct {
	cfg    PIEConfig
	rng    *rand.Rand
	target int64 // ticks
	next   int64 // ns: next probability update

	// pie_vars (times in ticks)
	qdelay, qdelayOld int64
	burstTime         int64
	dqTstamp          int64
	prob              uint64 // PIEMaxProb ≙ 1; may exceed it, as the kernel's
	accuProb          uint64
	dqCount           uint64
	avgDQRate         uint32 // bytes per tick << pieScale
	backlogOld        int

	q  ring
	st Stats
	x  PIEXStats
}

var _ Queue = (*PIE)(nil)

// NewPIE returns an empty PIE queue whose first update is due at 500 ms.
// rng supplies the drop rolls.
func NewPIE(cfg PIEConfig, rng *rand.Rand) (*PIE, error) {
	if rng == nil {
		return nil, errNilRand
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	q := &PIE{rng: rng, next: pieFirstUpdate}
	q.apply(cfg)
	q.varsInit()
	return q, nil
}

func (q *PIE) apply(cfg PIEConfig) {
	q.cfg = cfg
	q.target = cfg.Target >> psShift
	q.q.reserve(int(min(cfg.Limit, maxPrealloc)))
}

// varsInit is pie_vars_init: it restarts a measurement cycle; prob and the
// delays are kept.
func (q *PIE) varsInit() {
	q.burstTime = pieBurst
	q.dqTstamp = dtimeInvalid
	q.accuProb = 0
	q.dqCount = dqCountInvalid
	q.avgDQRate = 0
}

// Config returns the configuration in force.
func (q *PIE) Config() PIEConfig { return q.cfg }

// Change applies a new configuration as tc qdisc change: updates due up to
// now run first; the state is kept; packets over a lower limit are dropped
// from the head, counted as limit drops, and passed to drop (may be nil).
func (q *PIE) Change(cfg PIEConfig, now int64, drop func(Meta)) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	q.Advance(now)
	q.apply(cfg)
	for q.q.len() > int(cfg.Limit) {
		m := q.q.pop()
		q.st.countDrop(ReasonLimit)
		q.x.Dropped++
		if drop != nil {
			m.earlyMark = ReasonNone
			drop(m)
		}
	}
	return nil
}

// dropEarly is pie_drop_early: the random early drop decision at enqueue,
// against the backlog before the packet.
func (q *PIE) dropEarly(size int) bool {
	// Burst allowance left: no early drop.
	if q.burstTime > 0 {
		return false
	}
	// Delay under half the target with a low probability: no early drop.
	if q.qdelay < q.target/2 && q.prob < PIEMaxProb/5 {
		return false
	}
	// Fewer than two MTU-sized packets queued (like RED's min_th).
	mtu := q.cfg.MTU
	if q.q.bytes < 2*mtu {
		return false
	}
	local := q.prob
	if q.cfg.Bytemode && size <= mtu {
		local = uint64(size) * (q.prob / uint64(mtu))
	}
	// De-randomisation (RFC 8033 §5.1): accumulate the probability; never
	// drop below 0.85, always at 8.5.
	if local == 0 {
		q.accuProb = 0
	} else {
		q.accuProb += local
	}
	if q.accuProb < PIEMaxProb/100*85 {
		return false
	}
	if q.accuProb >= PIEMaxProb/2*17 {
		return true
	}
	if q.rng.Uint64()>>8 < local {
		q.accuProb = 0
		return true
	}
	return false
}

// Enqueue is pie_qdisc_enqueue: tail drop at the limit, then the early
// drop decision; with ECN on and a probability of at most 10 % an
// ECN-capable packet is marked (reported at dequeue) instead of dropped.
func (q *PIE) Enqueue(m Meta, now int64) Verdict {
	m = cleanMeta(m)
	var why Reason
	switch {
	case q.q.len() >= int(q.cfg.Limit):
		q.x.Overlimit++
		q.st.Overlimits++
		why = ReasonLimit
	case !q.dropEarly(int(m.Len)):
	case q.cfg.ECN && q.prob <= pieProbCap && m.ECN != NotECT:
		q.x.ECNMark++
		m.earlyMark = ReasonPIE
	default:
		why = ReasonPIE
	}
	if why != ReasonNone {
		q.x.Dropped++
		q.accuProb = 0
		q.st.countDrop(why)
		return Verdict{Action: Drop, Reason: why, Class: Classic}
	}
	// The enqueue time is what the timestamp mode measures; with the
	// rate estimator the kernel does not set it (Arrival still feeds
	// the Stats head delay here).
	m.Arrival = now
	q.x.PacketsIn++
	q.x.MaxQ = max(q.x.MaxQ, uint64(q.q.len()))
	q.st.enqueued(&m, q.q.len())
	q.q.push(m)
	q.st.MaxMemoryUsed = max(q.st.MaxMemoryUsed, uint64(q.q.bytes))
	return Verdict{Class: Classic}
}

// Dequeue takes the head and updates the delay estimate and the burst
// allowance (pie_process_dequeue). PIE never drops at dequeue.
func (q *PIE) Dequeue(now int64) (Meta, Verdict, bool) {
	if q.q.len() == 0 {
		return Meta{}, Verdict{}, false
	}
	m := q.q.pop()
	q.processDequeue(&m, now>>psShift)
	marked, why := m.earlyMark != ReasonNone, m.earlyMark
	m.earlyMark = ReasonNone
	return m, q.st.sent(&m, marked, why), true
}

// processDequeue is pie_process_dequeue at time now (ticks), with the
// backlog after the packet left.
func (q *PIE) processDequeue(m *Meta, now int64) {
	backlog := q.q.bytes
	var dtime int64
	if !q.cfg.DQRateEstimator {
		// Timestamp mode: the queue delay is this packet's sojourn.
		q.qdelay = now - m.Arrival>>psShift
		if q.dqTstamp != dtimeInvalid {
			dtime = now - q.dqTstamp
		}
		q.dqTstamp = now
		if backlog == 0 {
			q.qdelay = 0
		}
		if dtime == 0 {
			return
		}
	} else {
		// Rate estimator: measure the drain rate over each 16 KiB
		// dequeued while the backlog is at least that much.
		if backlog >= pieQueueThresh && q.dqCount == dqCountInvalid {
			q.dqTstamp = now
			q.dqCount = 0
		}
		if q.dqCount == dqCountInvalid {
			return
		}
		q.dqCount += uint64(m.Len)
		if q.dqCount < pieQueueThresh {
			return
		}
		dtime = now - q.dqTstamp
		if dtime == 0 {
			return
		}
		count := uint32(q.dqCount<<pieScale) / uint32(dtime)
		if q.avgDQRate == 0 {
			q.avgDQRate = count
		} else {
			q.avgDQRate = q.avgDQRate - q.avgDQRate>>3 + count>>3
		}
		if backlog < pieQueueThresh {
			q.dqCount = dqCountInvalid
		} else {
			q.dqCount = 0
			q.dqTstamp = now
		}
	}
	if q.burstTime > 0 {
		q.burstTime = max(q.burstTime-dtime, 0)
	}
}

// Advance runs every probability update due at or before now, each at its
// own time: 500 ms after creation, then every tupdate.
func (q *PIE) Advance(now int64) {
	for q.next <= now {
		if q.idleFixedPoint() {
			steps := (now-q.next)/q.cfg.Tupdate + 1
			if steps > (math.MaxInt64-q.next)/q.cfg.Tupdate {
				q.next = math.MaxInt64
			} else {
				q.next += steps * q.cfg.Tupdate
			}
			return
		}
		q.calculateProbability()
		q.next += q.cfg.Tupdate
	}
}

// idleFixedPoint: nothing queued, no probability, no delay and the
// measurement cycle already restarted: updates change nothing.
func (q *PIE) idleFixedPoint() bool {
	return q.q.len() == 0 && q.prob == 0 && q.qdelay == 0 && q.qdelayOld == 0 &&
		q.burstTime == pieBurst && q.dqTstamp == dtimeInvalid && q.accuProb == 0 &&
		q.dqCount == dqCountInvalid && q.avgDQRate == 0 && q.backlogOld == 0
}

// NextUpdate returns when the next probability update is due.
func (q *PIE) NextUpdate() int64 { return q.next }

// calculateProbability is pie_calculate_probability (RFC 8033 §4.2):
//
//	p += alpha·(qdelay − target) + beta·(qdelay − qdelay_old)
//
// with alpha and beta scaled down while p is small (÷2 below 10 %, then
// ÷4 per decade down to 0.0001 %, as RFC 8033's auto-tuning table), the
// increase capped at 2 % per update above 10 %, +2 % when the delay
// exceeds 250 ms, and p decayed by 1/64 when the delay was 0 twice.
func (q *PIE) calculateProbability() {
	backlog := q.q.bytes
	var qdelay, qdelayOld int64
	if q.cfg.DQRateEstimator {
		qdelayOld = q.qdelay
		q.qdelayOld = q.qdelay
		if q.avgDQRate > 0 {
			// u32 arithmetic, as the kernel's (backlog << PIE_SCALE).
			qdelay = int64(uint32(backlog)<<pieScale) / int64(q.avgDQRate)
		}
	} else {
		qdelay, qdelayOld = q.qdelay, q.qdelayOld
	}
	// A zero delay with a backlog means the backlog is tiny: leave p.
	updateProb := !(qdelay == 0 && backlog != 0)

	alpha := uint64(q.cfg.Alpha) * pieAlphaBetaUnit >> 4
	beta := uint64(q.cfg.Beta) * pieAlphaBetaUnit >> 4
	if q.prob < PIEMaxProb/10 {
		alpha >>= 1
		beta >>= 1
		for power := uint64(100); q.prob < PIEMaxProb/power && power <= 1_000_000; power *= 10 {
			alpha >>= 2
			beta >>= 2
		}
	}
	// Two's complement products, as the kernel's u64 · u64 into an s64.
	delta := int64(alpha)*(qdelay-q.target) + int64(beta)*(qdelay-qdelayOld)
	oldprob := q.prob
	if delta > int64(PIEMaxProb/50) && q.prob >= PIEMaxProb/10 {
		delta = pieProbStepLimit
	}
	if qdelay > pieHighDelay {
		delta += int64(PIEMaxProb / 50)
	}
	q.prob += uint64(delta)
	if delta > 0 {
		if q.prob < oldprob { // wrapped
			q.prob = PIEMaxProb
			updateProb = false
		}
	} else if q.prob > oldprob {
		q.prob = 0
	}
	if qdelay == 0 && qdelayOld == 0 && updateProb {
		q.prob -= q.prob / 64
	}
	q.qdelay = qdelay
	q.backlogOld = backlog
	// Delay low for two updates and p = 0: restart the measurement cycle.
	if q.qdelay < q.target/2 && q.qdelayOld < q.target/2 && q.prob == 0 &&
		(!q.cfg.DQRateEstimator || q.avgDQRate > 0) {
		q.varsInit()
	}
	if !q.cfg.DQRateEstimator {
		q.qdelayOld = qdelay
	}
}

// Prob returns the drop probability on the 32-bit scale of the other
// queues (MaxProb ≙ 1.0, saturated), for events and generic stats.
func (q *PIE) Prob() uint32 { return uint32(min(q.prob, PIEMaxProb) >> 24) }

// Len returns the packets and bytes queued.
func (q *PIE) Len() (pkts, bytes int) { return q.q.len(), q.q.bytes }

// Stats returns the counters; PIE holds the tc -s pie xstats.
func (q *PIE) Stats(now int64) Stats {
	s := q.st
	s.Kind = KindPIE
	s.Prob = q.Prob()
	s.DelayC = headDelay(&q.q, now)
	s.MemoryUsed = uint64(q.q.bytes)
	s.BacklogPkts, s.BacklogBytes = q.q.len(), q.q.bytes
	s.ECNMark = q.x.ECNMark
	x := q.x
	x.Prob = q.prob
	x.Delay = q.qdelay << psShift
	x.DQRateEstimating = q.cfg.DQRateEstimator
	if q.cfg.DQRateEstimator {
		x.AvgDQRate = uint32(uint64(q.avgDQRate) * psTicksPerSec >> pieScale)
	}
	s.PIE = x
	return s
}

// Reset empties the queue and restarts the measurement cycle (pie_reset),
// keeping the configuration, the probability and the counters; queued
// packets go to release if not nil.
func (q *PIE) Reset() { q.ResetAndRelease(nil) }

// ResetAndRelease is Reset, calling release (if not nil) for each packet
// discarded.
func (q *PIE) ResetAndRelease(release func(Meta)) {
	for q.q.len() > 0 {
		m := q.q.pop()
		if release != nil {
			m.earlyMark = ReasonNone
			release(m)
		}
	}
	q.varsInit()
}
