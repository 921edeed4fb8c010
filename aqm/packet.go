// Package aqm holds packet metadata, ECN classification, the Queue interface
// and the queue disciplines pi2hop offers, each with Linux qdisc semantics:
// DualPI2 (RFC 9332, sch_dualpi2), CoDel (RFC 8289, sch_codel), PIE
// (RFC 8033, sch_pie), fq_codel (RFC 8290, sch_fq_codel), a DOCSIS 3.1
// low-latency dual queue with Queue Protection (RFC 9957), and a tail-drop
// FIFO.
//
// Nothing here reads a clock, touches a file or logs: every call takes the
// current time as now (int64 nanoseconds, monotonic), so the same code runs
// in real time behind TUN devices and in virtual time in replay and tests.
package aqm

// ECN is the two-bit ECN field of an IP header (RFC 3168 §5).
type ECN uint8

const (
	NotECT ECN = 0 // 00: not ECN-capable
	ECT1   ECN = 1 // 01: L4S identifier (RFC 9331 §4)
	ECT0   ECN = 2 // 10: classic ECN-capable
	CE     ECN = 3 // 11: congestion experienced
)

// String returns the codepoint's usual name.
func (e ECN) String() string {
	switch e & 3 {
	case NotECT:
		return "Not-ECT"
	case ECT1:
		return "ECT(1)"
	case ECT0:
		return "ECT(0)"
	}
	return "CE"
}

// Class is the queue a packet is sorted into. The values match the minor
// numbers of sch_dualpi2's classes (handle:0, :1, :2).
type Class uint8

const (
	Classic Class = 0 // C-queue
	L4S     Class = 1 // L-queue, PI-coupled marking and step AQM
	LLLL    Class = 2 // L-queue without any AQM (only the limit applies)
)

// String returns "C" for the Classic queue and "L" for both L-queue classes,
// as replay and capture annotations print them.
func (c Class) String() string {
	if c == Classic {
		return "C"
	}
	return "L"
}

// Meta is what a queue keeps of one packet. It is a small value kept by
// value in fixed rings; the packet bytes stay with the caller, found by Slot.
// The zero Meta is "no packet".
type Meta struct {
	Arrival int64  // enqueue time, ns; set by Enqueue to its now
	Len     int32  // IP packet length in bytes (what the link serialises)
	Slot    int32  // caller's buffer index or row number; opaque to aqm
	Flow    uint32 // flow hash (5-tuple), for statistics and captures
	ECN     ECN    // ECN codepoint as received
	// Class is the classification a filter would give (tc priority or
	// classid in the kernel). It only matters when the ECN codepoint does
	// not match the ECN mask; the zero value is Classic, as a filter miss
	// is in Linux 6.18. Enqueue overwrites it with the final class.
	Class Class

	// What DualPI2 decided at enqueue, kept with the packet like the
	// kernel's skb control block; Dequeue clears them before handing the
	// Meta back.
	applyStep bool   // step AQM applies (L4S and min_qlen_step reached)
	earlyMark Reason // CE mark decided at enqueue (drop_enqueue), or none

	// DSCP is the packet's Differentiated Services codepoint (RFC 2474,
	// the upper six bits of the IPv4 TOS / IPv6 Traffic Class): NQB
	// classification (DSCP 45, RFC 9956) and fq_codel's
	// ce_threshold_selector read it. 0 for non-IP packets.
	DSCP uint8

	// Tag is the caller's, kept with the packet through the queue and
	// never read by aqm (shaper keeps a path fault's per-packet decision
	// here); it sits in what was padding.
	Tag uint8

	// Per-packet state of the other disciplines, in what was padding
	// (Meta is 32 bytes): Queue Protection's sanction (docsis) and the
	// index of the next packet of the same flow (fq_codel's flow lists).
	sanctioned bool
	next       int32
}

// DSCPNQB is the Non-Queue-Building codepoint (RFC 9956 §4: 45, 0x2D).
const DSCPNQB = 45

// DSField is the whole DS field as the kernel's skb_get_dsfield returns
// it: DSCP in the upper six bits, ECN in the lower two.
func (m *Meta) DSField() uint8 { return m.DSCP<<2 | uint8(m.ECN&3) }

// Action is what the AQM did with a packet.
type Action uint8

const (
	Pass Action = iota // forwarded unchanged (or still queued, from Enqueue)
	Mark               // forwarded with CE set
	Drop               // discarded
)

func (a Action) String() string {
	switch a {
	case Pass:
		return "sent"
	case Mark:
		return "marked"
	}
	return "dropped"
}

// Reason says which rule made a mark or a drop.
type Reason uint8

const (
	ReasonNone        Reason = iota
	ReasonStep               // L-queue step AQM: sojourn or queue length over step_thresh
	ReasonCoupled            // L-queue PI-coupled probability k·p'
	ReasonClassic            // C-queue probability p'²
	ReasonOverload           // p' too high for L4S marking: dropped instead (RFC 9332 §4.2.3)
	ReasonLimit              // queue full: packet limit or memory limit (tail drop)
	ReasonLoss               // the link's loss model (shaper), not the AQM
	ReasonCodel              // CoDel's control law (codel, fq_codel): sojourn above target for an interval
	ReasonCEThreshold        // CoDel's ce_threshold: sojourn above the shallow marking threshold
	ReasonPIE                // PIE's drop/mark probability (RFC 8033)
	ReasonRamp               // DOCSIS L-queue immediate AQM: the MINTH..MAXTH ramp
	ReasonSanction           // DOCSIS Queue Protection moved the packet to the C-queue (RFC 9957)
	ReasonFault              // an ECN path fault that drops ECN-capable packets (shaper), not the AQM
)

var reasonNames = [...]string{"", "step", "coupled", "classic", "overload", "limit", "loss",
	"codel", "ce_threshold", "pie", "ramp", "sanction", "ecn_fault"}

// String returns the reason as replay output and captures spell it.
func (r Reason) String() string {
	if int(r) < len(reasonNames) {
		return reasonNames[r]
	}
	return "unknown"
}

// Verdict is the decision on one packet and the queue it was sorted into.
type Verdict struct {
	Action Action
	Reason Reason
	Class  Class
	// Sub details the verdict for captures and analysis: fq_codel's flow
	// number (bucket index + 1, as tc's class minor); codel's control-law
	// count at a codel drop or mark (its drop state); 0 otherwise.
	Sub uint32
}

// Queue is a queue discipline driven in injected time. It owns no timer:
// periodic work (the PI update) runs from Advance, at the times NextUpdate
// announces, so real-time and virtual-time drivers share one trajectory.
//
// At equal timestamps a driver calls Advance first, then Dequeue, then
// Enqueue. A Queue is not safe for concurrent use: one owner per direction.
type Queue interface {
	// Enqueue classifies m, stamps m.Arrival = now and queues it. The
	// verdict's Action is Pass when the packet was queued and Drop when it
	// was refused (limit, or the AQM when dropping at enqueue).
	Enqueue(m Meta, now int64) Verdict

	// Dequeue removes the next packet at now. A packet the AQM drops at
	// dequeue is returned with Action Drop: the caller releases it and calls
	// Dequeue again. ok is false when the queue is empty.
	Dequeue(now int64) (m Meta, v Verdict, ok bool)

	// Advance runs every periodic update due at or before now, each at its
	// own scheduled time.
	Advance(now int64)

	// NextUpdate returns the time of the next periodic update, or
	// math.MaxInt64 if the discipline has none.
	NextUpdate() int64

	// Len returns the number of packets and bytes queued.
	Len() (pkts, bytes int)

	// Stats returns a snapshot of the counters at now.
	Stats(now int64) Stats
}
