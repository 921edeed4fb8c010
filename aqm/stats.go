package aqm

import "math"

// NumReasons is the number of Reason values, for arrays indexed by Reason.
const NumReasons = int(ReasonFault) + 1

// ClassCounters counts one queue's packets.
type ClassCounters struct {
	Enqueued uint64 // packets accepted into the queue
	Sent     uint64 // packets dequeued and forwarded (marked ones included)
	Bytes    uint64 // bytes dequeued and forwarded
	Marked   uint64 // packets forwarded with CE set by the AQM
	Dropped  uint64 // packets dropped, at enqueue or dequeue, for any reason
}

// Stats is a snapshot of a queue's counters. The first group mirrors
// struct tc_dualpi2_xstats (what `tc -s qdisc` prints for dualpi2); the
// second the generic qdisc counters; the last what pi2hop adds.
type Stats struct {
	Prob          uint32 // p', raw: MaxProb ≙ 1.0
	DelayC        int64  // C-queue head sojourn at now, ns (0 when empty)
	DelayL        int64  // L-queue head sojourn at now, ns (0 when empty)
	PktsInC       uint64 // cumulative enqueues into the C-queue
	PktsInL       uint64 // cumulative enqueues into the L-queue
	MaxQ          uint32 // largest total queue length seen at enqueue (before the packet)
	ECNMark       uint64 // CE marks, step marks included, re-marks of CE included
	StepMarks     uint64 // marks by the step AQM
	Credit        int32  // WRR credit; > 0 means the C-queue is served next
	MemoryUsed    uint64 // bytes of packet data queued
	MaxMemoryUsed uint64
	MemoryLimit   uint64

	SentPackets  uint64 // packets forwarded
	SentBytes    uint64
	Dropped      uint64 // all drops
	Overlimits   uint64 // drops because the packet or memory limit was reached
	BacklogPkts  int
	BacklogBytes int

	DropsBy [NumReasons]uint64 // drops by reason
	C, L    ClassCounters      // per queue; LLLL counts as L

	// Kind names the discipline (KindDualPI2, KindCoDel, ...); the
	// kind's own tc xstats are in the field of that name (zero otherwise).
	Kind  string
	CoDel CodelXStats
	PIE   PIEXStats
	FQ    FQCodelXStats
	QProt QProtStats
	// DOCSISClassic is the docsis kind's Classic AQM state.
	DOCSISClassic DOCSISClassicStats
}

// DOCSISClassicStats is the docsis kind's Classic AQM: which one, p_C,
// and DOCSIS-PIE's delay estimate and burst protection.
type DOCSISClassicStats struct {
	AQM            string // DOCSISClassicPIE or DOCSISClassicPI2
	ProbC          uint64 // p_C, 2^32 ≙ 1: DOCSIS-PIE's drop_prob_ (per 1024-byte packet, up to 13.6), or PI2's p'²
	QDelay         int64  // ns: DOCSIS-PIE's C-queue delay estimate at the last update
	BurstAllowance int64  // ns: DOCSIS-PIE's burst allowance left
	BurstState     string // DOCSIS-PIE's burst state: none, burst, protecting
}

// DOCSISProbOne is DOCSISClassicStats.ProbC's 1.
const DOCSISProbOne = 1 << 32

// CodelXStats is what `tc -s qdisc` shows for codel (struct
// tc_codel_xstats), times in ns (tc prints them in µs).
type CodelXStats struct {
	MaxPacket     uint32 // largest packet seen at dequeue, bytes
	Count         uint32 // drops/marks in the current dropping state
	LastCount     uint32 // count when the dropping state was last entered
	LDelay        int64  // sojourn of the last packet dequeued
	DropNext      int64  // time to the next drop, relative to now (0 unless dropping)
	Dropping      bool
	DropOverlimit uint64 // tail drops at the packet limit
	ECNMark       uint64 // control-law CE marks
	CEMark        uint64 // ce_threshold CE marks
}

// PIEXStats is what `tc -s qdisc` shows for pie (struct tc_pie_xstats).
type PIEXStats struct {
	Prob             uint64 // drop probability, the kernel's 56-bit scale (PIEMaxProb ≙ 1.0)
	Delay            int64  // current queue delay estimate, ns
	AvgDQRate        uint32 // bytes/s, only with dq_rate_estimator
	DQRateEstimating bool
	PacketsIn        uint64
	Dropped          uint64 // AQM drops and tail drops
	Overlimit        uint64 // tail drops at the packet limit
	MaxQ             uint64 // largest queue length seen at enqueue, packets
	ECNMark          uint64
}

// FQCodelXStats is what `tc -s qdisc` shows for fq_codel (struct
// tc_fq_codel_qd_stats).
type FQCodelXStats struct {
	MaxPacket      uint32
	DropOverlimit  uint64 // packets dropped because the qdisc was full (limit or memory)
	ECNMark        uint64 // control-law CE marks
	NewFlowCount   uint64 // times a flow was (re)added to the new-flows list
	NewFlowsLen    int    // flows in the new-flows list now
	OldFlowsLen    int    // flows in the old-flows list now
	CEMark         uint64 // ce_threshold CE marks
	MemoryUsage    uint64 // bytes queued
	DropOvermemory uint64 // of DropOverlimit, those over memory_limit
}

// QProtStats counts DOCSIS Queue Protection's decisions (RFC 9957).
type QProtStats struct {
	SanctionedPackets uint64 // L4S/NQB packets moved to the C-queue
	// SanctionedFlows counts flows sanctioned, by episode: a bucket's
	// first sanction since it was (re)claimed. A bursty flow whose score
	// drains between bursts counts once per burst sanctioned.
	SanctionedFlows uint64
	DefaultBucket   uint64 // packets scored in the shared default bucket
}

// Kind-independent bookkeeping of the single-queue disciplines (CoDel,
// PIE, fq_codel): every packet is Classic.

// cleanMeta clears what a previous queue may have left in m.
func cleanMeta(m Meta) Meta {
	m.Len = max(m.Len, 0)
	m.Class = Classic
	m.applyStep, m.earlyMark, m.sanctioned, m.next = false, ReasonNone, false, 0
	return m
}

func (s *Stats) countDrop(why Reason) {
	s.Dropped++
	s.DropsBy[why]++
	s.C.Dropped++
}

// enqueued counts an accepted packet; qlen is the queue length before it.
func (s *Stats) enqueued(m *Meta, qlen int) {
	s.MaxQ = max(s.MaxQ, uint32(min(uint64(qlen), math.MaxUint32)))
	s.PktsInC++
	s.C.Enqueued++
}

// sent counts a packet leaving and returns its verdict.
func (s *Stats) sent(m *Meta, marked bool, why Reason) Verdict {
	s.SentPackets++
	s.SentBytes += uint64(m.Len)
	s.C.Sent++
	s.C.Bytes += uint64(m.Len)
	v := Verdict{Class: Classic}
	if marked {
		s.C.Marked++
		v.Action, v.Reason = Mark, why
	}
	return v
}
