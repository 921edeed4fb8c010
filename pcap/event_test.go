package pcap

import (
	"testing"

	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/shaper"
)

func TestEventAnnotation(t *testing.T) {
	meta := aqm.Meta{Arrival: 1_000, ECN: aqm.ECT1, Class: aqm.L4S}
	for _, tc := range []struct {
		name string
		ev   shaper.Event
		want Annotation
	}{
		{"sent after 4µs in the queue",
			shaper.Event{Meta: meta, Verdict: aqm.Verdict{Action: aqm.Mark, Reason: aqm.ReasonStep, Class: aqm.L4S}, Deq: 5_000, Dep: 6_000, At: 7_000, Prob: 1 << 30},
			Annotation{Class: aqm.L4S, Sojourn: 4_000, Prob: 1 << 30, Verdict: aqm.Verdict{Action: aqm.Mark, Reason: aqm.ReasonStep, Class: aqm.L4S}, ECNIn: aqm.ECT1, HasDecision: true}},
		{"refused at enqueue: never dequeued, no sojourn",
			shaper.Event{Meta: meta, Verdict: aqm.Verdict{Action: aqm.Drop, Reason: aqm.ReasonLimit, Class: aqm.Classic}, At: 1_000},
			Annotation{Class: aqm.Classic, Verdict: aqm.Verdict{Action: aqm.Drop, Reason: aqm.ReasonLimit, Class: aqm.Classic}, ECNIn: aqm.ECT1, HasDecision: true}},
	} {
		if got := EventAnnotation(&tc.ev); got != tc.want {
			t.Errorf("%s: got %+v, want %+v", tc.name, got, tc.want)
		}
	}
}
