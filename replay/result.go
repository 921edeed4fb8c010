package replay

import "github.com/pi2hop/pi2hop/aqm"

// Utilisation returns the fraction of the replay's span, first arrival to
// last departure, that the link spent transmitting; 0 for an empty span.
func (r *Result) Utilisation() float64 {
	span := r.LastDeparture - r.FirstArrival
	if span <= 0 {
		return 0
	}
	return float64(r.Busy) / float64(span)
}

// Marked returns the queue's CE marks, all reasons together.
func (q *QueueCounts) Marked() uint64 { return sum(&q.Marks) }

// Dropped returns the queue's drops, all reasons together (link loss
// included).
func (q *QueueCounts) Dropped() uint64 { return sum(&q.Drops) }

// SojournMean returns the mean sojourn of the dequeued packets in ns, and
// false when none left the queue.
func (q *QueueCounts) SojournMean() (int64, bool) {
	if q.Dequeued == 0 {
		return 0, false
	}
	return q.SojournSum / int64(q.Dequeued), true
}

func sum(a *[aqm.NumReasons]uint64) uint64 {
	var n uint64
	for _, v := range a {
		n += v
	}
	return n
}

// Reasons are the mark and drop reasons a queue kind can give, in the
// order the summary lists them (link loss among the drops); the dualpi2
// and fifo lists are the enum's order, as replay has always printed them.
func Reasons(kind string) (marks, drops []aqm.Reason) {
	switch kind {
	case aqm.KindCoDel, aqm.KindFQCodel:
		return []aqm.Reason{aqm.ReasonCodel, aqm.ReasonCEThreshold}, []aqm.Reason{aqm.ReasonCodel, aqm.ReasonLimit, aqm.ReasonLoss}
	case aqm.KindPIE:
		return []aqm.Reason{aqm.ReasonPIE}, []aqm.Reason{aqm.ReasonPIE, aqm.ReasonLimit, aqm.ReasonLoss}
	case aqm.KindDOCSIS:
		return []aqm.Reason{aqm.ReasonRamp, aqm.ReasonCoupled, aqm.ReasonClassic},
			[]aqm.Reason{aqm.ReasonRamp, aqm.ReasonCoupled, aqm.ReasonClassic, aqm.ReasonOverload, aqm.ReasonLimit, aqm.ReasonLoss}
	}
	for why := aqm.ReasonStep; why <= aqm.ReasonLoss; why++ {
		drops = append(drops, why)
	}
	return []aqm.Reason{aqm.ReasonStep, aqm.ReasonCoupled, aqm.ReasonClassic, aqm.ReasonOverload}, drops
}

// DropReasons are Reasons' drops and the link's ECN path fault
// (drop-ect), which any queue kind can see.
func DropReasons(kind string) []aqm.Reason {
	_, drops := Reasons(kind)
	return append(drops, aqm.ReasonFault)
}
