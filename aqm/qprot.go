package aqm

// Queue Protection (RFC 9957, the DOCSIS 3.1 algorithm): each flow that
// uses the L-queue owns a bucket whose queuing score grows, per packet, by
// the L-queue's native marking probability times the packet's size, and
// drains at a fixed aging rate. The score is kept as the bucket's expiry
// time t_exp (score = t_exp − now, in ns of "time at the aging rate").
// When the L-queue delay exceeds CRITICALqL and the product of delay and
// the packet's flow score exceeds CRITICALqLSCORE·CRITICALqL, the packet
// is sanctioned: it goes to the C-queue instead.

import (
	"math"
	"math/bits"
)

// QProtConfig holds Queue Protection's parameters (RFC 9957 §4.1 names).
type QProtConfig struct {
	On bool // QPROTECT_ON
	// CriticalQL is CRITICALqL: the L-queue delay above which sanctions
	// are considered, ns; 0 (the default) means MAXTH as in force.
	CriticalQL int64
	// CriticalQLScore is CRITICALqLSCORE: the score (ns) that, scaled by
	// qdelay/CRITICALqL, triggers a sanction (4 ms).
	CriticalQLScore int64
	// LgAging is LG_AGING: the score drains at 2^LG_AGING bytes/s of
	// "fully marked" traffic (19: 2^19 B/s ≈ 4.2 Mb/s).
	LgAging uint8
	// Attempts is ATTEMPTS: buckets tried per flow before the default one.
	Attempts uint8
	// BISize is BI_SIZE: 2^BI_SIZE dedicated buckets plus a default one.
	BISize uint8
	// MaxQLScore is MAX_QLSCORE, the cap on a score, ns (5 s).
	MaxQLScore int64
}

// DefaultQProtConfig returns RFC 9957's defaults: on, CRITICALqL = MAXTH
// (1 ms unless FLOOR raises it), CRITICALqLSCORE 4 ms, LG_AGING 19, ATTEMPTS 2, BI_SIZE 5
// (32 buckets + the default), MAX_QLSCORE 5 s.
func DefaultQProtConfig() QProtConfig {
	return QProtConfig{
		On:              true,
		CriticalQLScore: 4_000_000,
		LgAging:         19,
		Attempts:        2,
		BISize:          5,
		MaxQLScore:      5_000_000_000,
	}
}

func (c QProtConfig) ranges() []ConfigError {
	return []ConfigError{
		{"qp_latency_threshold", c.CriticalQL, 0, maxCodelTime, UnitNanos},
		{"qp_score_threshold", c.CriticalQLScore, 0, maxCodelTime, UnitNanos},
		{"qp_lg_aging", int64(c.LgAging), 1, 30, ""},
		{"qp_attempts", int64(c.Attempts), 1, 32 / max(int64(c.BISize), 1), ""},
		{"qp_bi_size", int64(c.BISize), 0, 14, ""},
		{"qp_max_score", c.MaxQLScore, 1, math.MaxInt64 / 4, UnitNanos},
	}
}

// qpBucket is one flow's queuing score state.
type qpBucket struct {
	id         uint32 // the microflow that owns it (Meta.Flow)
	exp        int64  // t_exp, ns: score = exp − now while exp > now
	sanctioned bool   // a packet was sanctioned since the bucket was (re)claimed
}

// qprot is the Queue Protection state: 2^BI_SIZE buckets and the default
// bucket at index 2^BI_SIZE.
type qprot struct {
	cfg     QProtConfig
	buckets []qpBucket
	st      QProtStats
}

func newQProt(cfg QProtConfig) qprot {
	return qprot{cfg: cfg, buckets: make([]qpBucket, 1<<cfg.BISize+1)}
}

// pickBucket is RFC 9957's pick_bucket: try ATTEMPTS buckets indexed by
// successive BI_SIZE-bit slices of the flow hash; the flow's own bucket
// if one of them is, else the first expired one, else the shared default
// bucket. A bucket whose score has drained restarts from now.
func (p *qprot) pickBucket(flow uint32, now int64) int {
	nb := 1 << p.cfg.BISize
	mask := uint32(nb - 1)
	h32 := flow
	hsav := nb
	for range p.cfg.Attempts {
		h := int(h32 & mask)
		b := &p.buckets[h]
		if b.id == flow {
			if b.exp <= now {
				b.exp, b.sanctioned = now, false
			}
			return h
		}
		if hsav == nb && b.exp <= now {
			hsav = h
		}
		h32 >>= p.cfg.BISize
	}
	b := &p.buckets[hsav]
	switch {
	case hsav != nb:
		b.exp, b.sanctioned = now, false
	case b.exp <= now:
		b.exp, b.sanctioned = now, false
		p.st.DefaultBucket++
	default:
		p.st.DefaultBucket++
	}
	b.id = flow
	return hsav
}

// congestionScore is probNative·size/AGING in ns, AGING being
// 2^(LG_AGING−30) bytes/ns: with probNative on the MaxProb ≙ 1 scale,
// prob·size·2^(30−LG_AGING)/2^32 = prob·size >> (LG_AGING+2). A fully
// marked 1500-byte packet scores 1500·2048 ns ≈ 3.07 ms at LG_AGING 19.
func (c *QProtConfig) congestionScore(probNative uint32, size int) int64 {
	return int64(uint64(probNative) * uint64(size) >> (c.LgAging + 2))
}

// fillBucket is RFC 9957's fill_bucket: add the packet's congestion score
// to the bucket, capped at MAX_QLSCORE, and return the flow's score.
func (p *qprot) fillBucket(h int, probNative uint32, size int, now int64) int64 {
	b := &p.buckets[h]
	b.exp = p.cfg.fill(b.exp, probNative, size, now)
	return b.exp - now
}

// fill is fill_bucket's arithmetic on a bucket's expiry time: the
// packet's congestion score added, the score capped at MAX_QLSCORE.
func (c *QProtConfig) fill(exp int64, probNative uint32, size int, now int64) int64 {
	exp += c.congestionScore(probNative, size)
	if exp-now > c.MaxQLScore {
		exp = now + c.MaxQLScore
	}
	return exp
}

// sanctions is qprotect's condition: the L-queue delay is over CRITICALqL
// and delay·score over CRITICALqLSCORE·CRITICALqL.
func (c *QProtConfig) sanctions(qdelay, score int64) bool {
	return qdelay > c.CriticalQL && productAbove(qdelay, score, c.CriticalQLScore, c.CriticalQL)
}

// protect is RFC 9957's qprotect for one L-queue packet: qdelay is the
// L-queue delay it meets, probNative the L-queue's native marking
// probability. It returns true when the packet is to be sanctioned.
func (p *qprot) protect(m *Meta, qdelay int64, probNative uint32, now int64) bool {
	h := p.pickBucket(m.Flow, now)
	score := p.fillBucket(h, probNative, int(m.Len), now)
	if !p.cfg.sanctions(qdelay, score) {
		return false
	}
	p.st.SanctionedPackets++
	if b := &p.buckets[h]; !b.sanctioned {
		b.sanctioned = true
		p.st.SanctionedFlows++
	}
	return true
}

// productAbove reports a·b > c·d for non-negative values, without overflow.
func productAbove(a, b, c, d int64) bool {
	hi1, lo1 := bits.Mul64(uint64(max(a, 0)), uint64(max(b, 0)))
	hi2, lo2 := bits.Mul64(uint64(max(c, 0)), uint64(max(d, 0)))
	return hi1 > hi2 || (hi1 == hi2 && lo1 > lo2)
}

// QProtScorer keeps Queue Protection's per-flow queuing score outside a
// DOCSIS queue, for any discipline: the same arithmetic (the ramp's
// native probability, fill_bucket, qprotect's condition) applied to what
// each L-queue packet met, so an observer can say whether DOCSIS would
// sanction a flow. The caller keeps each flow's bucket expiry time.
type QProtScorer struct {
	cfg          QProtConfig // CriticalQL resolved as a DOCSIS queue holds it
	minTh, width int64
	// lgWidth is log2(width) when width is a power of two (as LG_RANGE
	// makes it unless MAXTH's cap shortens it), else -1: the ramp's
	// division is then a shift, with the same result.
	lgWidth int
}

// NewQProtScorer returns the scorer of cfg's ramp and Queue Protection,
// with the values a DOCSIS queue of cfg has in force (CRITICALqL = MAXTH
// after FLOOR when 0).
func NewQProtScorer(cfg DOCSISConfig) QProtScorer {
	s := QProtScorer{cfg: cfg.QProt}
	s.minTh, s.width = cfg.ramp()
	s.lgWidth = -1
	if s.width&(s.width-1) == 0 {
		s.lgWidth = bits.Len64(uint64(s.width)) - 1
	}
	if s.cfg.CriticalQL == 0 {
		s.cfg.CriticalQL = s.minTh + s.width
	}
	return s
}

// MinTh is the ramp's MINTH in force, ns: a packet that met no more delay
// than that adds nothing to its flow's score and is never sanctioned
// (CRITICALqL is above it), so a caller may skip Score for it.
func (s *QProtScorer) MinTh() int64 { return s.minTh }

// Thresholds returns CRITICALqL and CRITICALqLSCORE in force, ns.
func (s *QProtScorer) Thresholds() (criticalQL, criticalScore int64) {
	return s.cfg.CriticalQL, s.cfg.CriticalQLScore
}

// Score adds one L-queue packet of size bytes that met an L-queue delay of
// qdelay at now to the flow whose bucket expires at *exp (0 for a new
// flow; times must not decrease per flow). It returns the flow's score
// after the packet (ns) and whether qprotect would sanction the packet.
// A drained bucket restarts from now, as pick_bucket restarts it.
func (s *QProtScorer) Score(exp *int64, qdelay int64, size int, now int64) (score int64, sanction bool) {
	e := max(*exp, now)
	var p uint32
	if d := qdelay - s.minTh; s.lgWidth >= 0 && d > 0 && d < s.width {
		p = uint32(uint64(d) * MaxProb >> s.lgWidth)
	} else {
		p = rampProb(qdelay, s.minTh, s.width)
	}
	e = s.cfg.fill(e, p, size, now)
	*exp = e
	score = e - now
	return score, s.cfg.sanctions(qdelay, score)
}
