package aqm

// NumReasons is the number of Reason values, for arrays indexed by Reason.
const NumReasons = int(ReasonLoss) + 1

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
}
