package pcap

import "github.com/pi2hop/pi2hop/shaper"

// EventAnnotation is what a capture says of a packet the link decided on:
// its queue, sojourn (0 when it never left the queue: a drop at enqueue),
// the queue's probability at the decision, the verdict and the codepoint
// it arrived with.
func EventAnnotation(ev *shaper.Event) Annotation {
	var sojourn int64
	if ev.Deq != 0 {
		sojourn = ev.Sojourn()
	}
	return Annotation{
		Class:       ev.Verdict.Class,
		Sojourn:     sojourn,
		Prob:        ev.Prob,
		Verdict:     ev.Verdict,
		ECNIn:       ev.ECNIn(),
		HasDecision: true,
		Fault:       ev.Fault,
		FaultFrom:   ev.FaultFrom,
		FaultTo:     ev.FaultTo,
	}
}
