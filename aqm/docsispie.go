package aqm

// docsispie: DOCSIS-PIE (RFC 8034 §4 and its Appendix pseudo-code; the
// Classic AQM of DOCSIS 3.1's dual queue as CableLabs' docsis-ns3 models
// it), the docsis kind's default Classic AQM. It is PIE (RFC 8033) with
// DOCSIS's changes: the queue delay is estimated from the queue's bytes
// and the configured rate, not measured; the probability is scaled by
// packet size against a mean packet of 1024 bytes; the auto-scaling of
// the gains goes on above 10 %; the decay works below 5 ms rather than
// at 0; and the burst allowance runs a three-state machine that keeps the
// AQM off until the queue first reaches a third of its buffer.
//
// Fixed point: a probability is an int64 in units of 2^-32 (dpOne ≙ 1).
// drop_prob_ is a per-mean-packet probability and so may exceed 1: it is
// capped at PROB_LOW·MEAN_PKTSIZE/MIN_PKTSIZE = 13.6, where a 64-byte
// packet is dropped with PROB_LOW. Every threshold "p < x" is compared as
// p·(1/x) < dpOne, which is exact; values added (0.02) and limits (0.85,
// 8.5, 13.6) are floor(x·2^32). Gains are in Hz·256, as tc sends alpha and
// beta.
//
// Deliberate differences, each commented where it lives:
//   - an ECN-capable Classic packet that drop_early picks is CE-marked
//     while drop_prob_ is at most 10 % (RFC 8033 §5.1), where docsis-ns3
//     drops every one;
//   - BUFFER_SIZE (TargetBuffer at the rate) only sets the third the burst
//     state waits for: the queue's limits are the coupled core's;
//   - without a rate the delay estimate is the C-queue head's sojourn.

import "math/bits"

// Classic AQMs of the docsis kind.
const (
	DOCSISClassicPIE = "pie" // DOCSIS-PIE (RFC 8034), DOCSIS's own
	DOCSISClassicPI2 = "pi2" // DualPI2's PI2 with DualPI2's gains
)

// DOCSISClassics lists the Classic AQMs of the docsis kind, default first.
var DOCSISClassics = []string{DOCSISClassicPIE, DOCSISClassicPI2}

const (
	dpOne      int64 = 1 << 32          // probability 1
	dpProbLow        = dpOne * 85 / 100 // PROB_LOW 0.85: per-packet cap; de-randomisation's low bound
	dpProbHigh       = dpOne * 85 / 10  // PROB_HIGH 8.5: de-randomisation's high bound
	dpMaxProb        = dpOne * 136 / 10 // PROB_LOW·MEAN_PKTSIZE/MIN_PKTSIZE = 13.6
	dpStep           = dpOne / 50       // 0.02: the cap on an increase above 10 %, and the high-delay step
	dpMeanPkt        = 1024             // MEAN_PKTSIZE, bytes
	dpMinPkt         = 64               // MIN_PKTSIZE, bytes
	// dpLatencyLow: below it twice running the probability decays (×0.98).
	dpLatencyLow = 5_000_000 // ns
	// dpLatencyHigh: above it the probability rises by 0.02 an update.
	dpLatencyHigh = 200_000_000 // ns
	// dpBurstReset: quiet time that returns the burst state to none.
	dpBurstReset = 1_000_000_000 // ns
	// dpMaxQdelay bounds the delay estimate so the update cannot overflow.
	dpMaxQdelay = 60_000_000_000 // ns
)

// DOCSIS-PIE defaults (RFC 8034; docsis-ns3's A, B, MaxBurstAllowance).
const (
	DefaultDOCSISPIEAlpha    = 64          // Hz·256: A = 0.25 Hz
	DefaultDOCSISPIEBeta     = 640         // Hz·256: B = 2.5 Hz
	DefaultDOCSISPIEMaxBurst = 142_000_000 // ns: MAX_BURST
	// DefaultDOCSISTargetBuffer is DOCSIS's default Target Buffer, as
	// time at the service rate: BUFFER_SIZE is 100 ms of the rate.
	DefaultDOCSISTargetBuffer = 100_000_000 // ns
)

// DOCSISPIEConfig is DOCSIS-PIE's configuration; the latency target and
// the update interval are the coupled core's Target and Tupdate.
type DOCSISPIEConfig struct {
	Alpha, Beta  uint32 // Hz·256: A (on qdelay − target) and B (on the change of qdelay)
	MaxBurst     int64  // ns: the burst allowance after the first drop of a burst
	TargetBuffer int64  // ns: BUFFER_SIZE as time at the rate; the AQM waits for a third of it
}

// DefaultDOCSISPIEConfig returns RFC 8034's values.
func DefaultDOCSISPIEConfig() DOCSISPIEConfig {
	return DOCSISPIEConfig{
		Alpha: DefaultDOCSISPIEAlpha, Beta: DefaultDOCSISPIEBeta,
		MaxBurst: DefaultDOCSISPIEMaxBurst, TargetBuffer: DefaultDOCSISTargetBuffer,
	}
}

func (c DOCSISPIEConfig) ranges() []ConfigError {
	return []ConfigError{
		{"alpha", int64(c.Alpha), 0, 65535, ""},
		{"beta", int64(c.Beta), 0, 65535, ""},
		{"max_burst", c.MaxBurst, 0, 10_000_000_000, UnitNanos},
		{"target_buffer", c.TargetBuffer, 1_000_000, 10_000_000_000, UnitNanos},
	}
}

// burstState is DOCSIS-PIE's burst protection state.
type burstState uint8

const (
	noBurst           burstState = iota // the AQM waits for a third of the buffer
	inBurst                             // the AQM acts; the next drop arms the allowance
	inBurstProtecting                   // the allowance was armed by the burst's first drop
)

var burstStateNames = [...]string{"none", "burst", "protecting"}

func (s burstState) String() string { return burstStateNames[s] }

// docsisPIE is DOCSIS-PIE's state: the control path (update) and the data
// path (dropEarly), without a queue of its own.
type docsisPIE struct {
	cfg        DOCSISPIEConfig
	target     int64 // ns: LATENCY_TARGET
	interval   int64 // ns: the update interval
	dropProb   int64 // drop_prob_, 2^-32 units, 0..dpMaxProb
	qdelay     int64 // ns: the estimate of the last update (qdelay_old_ after it)
	accuProb   int64 // de-randomisation's accumulated probability
	allowance  int64 // ns: burst allowance left
	state      burstState
	burstReset int64 // updates in a row found quiet while in a burst
}

// autoScale is RFC 8034's auto-scaling of the gains: the base shift s
// applied as p·2^(24−s) in update, for drop_prob_ below each bound (as
// 1/bound: p·den < 1), then ×2, ×8, ×32 from 10 % up.
var autoScale = [...]struct {
	den   int64 // drop_prob_·den < 1 selects this row
	shift uint  // 24 − log2(divisor)
}{
	{1_000_000, 24 - 11}, // < 0.000001: p/2048
	{100_000, 24 - 9},    // < 0.00001: p/512
	{10_000, 24 - 7},     // < 0.0001: p/128
	{1_000, 24 - 5},      // < 0.001: p/32
	{100, 24 - 3},        // < 0.01: p/8
	{10, 24 - 1},         // < 0.1: p/2
}

// scaleShift returns the shift for drop_prob_ p: p·2^shift/1e9 turns
// Hz·256·ns into 2^-32 units with the auto-scale applied (2^32/256 = 2^24).
func scaleShift(p int64) uint {
	for _, r := range autoScale {
		if p*r.den < dpOne {
			return r.shift
		}
	}
	switch {
	case p < dpOne:
		return 24 + 1 // p/0.5
	case p < 10*dpOne:
		return 24 + 3 // p/0.125
	}
	return 24 + 5 // p/0.03125
}

// increment is A·(qdelay − target) + B·(qdelay − old) in 2^-32 units,
// auto-scaled for drop_prob_ p, truncated toward zero.
func (d *docsisPIE) increment(qdelay, old, p int64) int64 {
	e := int64(d.cfg.Alpha)*(qdelay-d.target) + int64(d.cfg.Beta)*(qdelay-old)
	u := uint64(e)
	if e < 0 {
		u = uint64(-e)
	}
	// |e| < 2^17·2^36, so hi < 2^29 < 1e9 and Div64 cannot overflow.
	hi, lo := bits.Mul64(u, 1<<scaleShift(p))
	v, _ := bits.Div64(hi, lo, 1_000_000_000)
	if e < 0 {
		return -int64(v)
	}
	return int64(v)
}

// update is one run of the control path (RFC 8034's calculate_drop_prob)
// with qdelay the Classic queue's delay estimate now:
//
//	if burst allowance left: drop_prob_ = 0
//	else: p = auto-scaled A·(qdelay − target) + B·(qdelay − qdelay_old_)
//	      p = min(p, 0.02) once drop_prob_ >= 0.1
//	      drop_prob_ += p; × 0.98 if qdelay and qdelay_old_ < 5 ms,
//	      else + 0.02 if qdelay > 200 ms; clamped to [0, 13.6]
//	burst allowance −= interval; the burst state steps back towards
//	none after quiet updates (both delays under target/2, no
//	probability, no allowance): protecting → burst at once, burst →
//	none after 1 s of them.
func (d *docsisPIE) update(qdelay int64) {
	qdelay = min(max(qdelay, 0), dpMaxQdelay)
	old := d.qdelay
	if d.allowance > 0 {
		d.dropProb = 0
	} else {
		p := d.increment(qdelay, old, d.dropProb)
		if d.dropProb*10 >= dpOne && p > dpStep {
			p = dpStep
		}
		np := d.dropProb + p
		if qdelay < dpLatencyLow && old < dpLatencyLow {
			np = np * 49 / 50
		} else if qdelay > dpLatencyHigh {
			np += dpStep
		}
		d.dropProb = min(max(np, 0), dpMaxProb)
	}
	d.allowance = max(d.allowance-d.interval, 0)
	quiet := 2*qdelay < d.target && 2*old < d.target && d.dropProb == 0 && d.allowance == 0
	switch {
	case quiet && d.state == inBurstProtecting:
		d.state, d.burstReset = inBurst, 0
	case quiet && d.state == inBurst:
		d.burstReset++
		if d.burstReset*d.interval > dpBurstReset {
			d.state, d.burstReset = noBurst, 0
		}
	case !quiet && d.state == inBurst:
		d.burstReset = 0
	}
	d.qdelay = qdelay
}

// dropEarly is the data path (RFC 8034's drop_early) for a Classic packet
// of size bytes arriving at a queue of qbytes (without it); belowThird
// says the queue is under a third of its buffer; roll draws against a
// probability in 2^-32 units. It reports whether the packet is dropped
// (or, if ECN-capable, marked).
func (d *docsisPIE) dropEarly(size, qbytes int, belowThird bool, roll func(uint32) bool) bool {
	if d.allowance > 0 {
		return false
	}
	if d.dropProb == 0 {
		d.accuProb = 0
	}
	if d.state == noBurst {
		if belowThird {
			return false
		}
		d.state = inBurst
	}
	// Byte mode: a packet of size bytes counts size/MEAN_PKTSIZE packets.
	p := min(d.dropProb*int64(size)/dpMeanPkt, dpProbLow)
	// Saturating keeps the sum bounded while the guards below hold it
	// back; past PROB_HIGH the outcome is the same.
	d.accuProb = min(d.accuProb+p, dpProbHigh)
	switch {
	case 2*d.qdelay < d.target && d.dropProb*5 < dpOne:
		return false // light load: qdelay_old_ under target/2, drop_prob_ under 0.2
	case qbytes <= 2*dpMeanPkt:
		return false
	case d.accuProb < dpProbLow:
		return false // de-randomisation: not yet
	case d.accuProb < dpProbHigh && !roll(uint32(p)):
		return false
	}
	d.accuProb = 0
	if d.state == inBurst {
		d.state, d.allowance = inBurstProtecting, d.cfg.MaxBurst
	}
	return true
}

// idle reports whether an update with an empty queue would change nothing.
func (d *docsisPIE) idle() bool {
	return d.dropProb == 0 && d.qdelay == 0 && d.allowance == 0 && d.state == noBurst
}

// reset clears the controller's state (the configuration stays).
func (d *docsisPIE) reset() {
	d.dropProb, d.qdelay, d.accuProb, d.allowance = 0, 0, 0, 0
	d.state, d.burstReset = noBurst, 0
}

// baseProb is √drop_prob_ in DualPI2's units (MaxProb ≙ 1), the p' the
// L-queue couples to (k·√p_C); 1 from drop_prob_ 1 up.
func (d *docsisPIE) baseProb() uint32 {
	if d.dropProb >= dpOne {
		return MaxProb
	}
	return uint32(min(isqrt(uint64(d.dropProb)<<32), MaxProb))
}

// isqrt is ⌊√x⌋.
func isqrt(x uint64) uint64 {
	if x == 0 {
		return 0
	}
	// Newton's method from a power of two at or above √x: decreasing to ⌊√x⌋.
	r := uint64(1) << ((bits.Len64(x) + 1) / 2)
	for {
		n := (r + x/r) / 2
		if n >= r {
			return r
		}
		r = n
	}
}
