package pcap

import "github.com/pi2hop/pi2hop/shaper"

// EventAnnotation is what a capture says of a packet the queue decided
// on: its class, sojourn (0 when it never left the queue), the queue's p'
// at the decision, the verdict and the codepoint it arrived with.
func EventAnnotation(ev *shaper.Event) Annotation {
	var sojourn int64
	if ev.Deq != 0 {
		sojourn = ev.Deq - ev.Meta.Arrival
	}
	return Annotation{
		Class:       ev.Verdict.Class,
		Sojourn:     sojourn,
		Prob:        ev.Prob,
		Verdict:     ev.Verdict,
		ECNIn:       ev.Meta.ECN,
		HasDecision: true,
	}
}
