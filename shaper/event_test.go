package shaper

import (
	"testing"

	"github.com/pi2hop/pi2hop/aqm"
)

func TestEventECNOut(t *testing.T) {
	tests := []struct {
		in     aqm.ECN
		action aqm.Action
		want   aqm.ECN
	}{
		{aqm.ECT1, aqm.Mark, aqm.CE},
		{aqm.ECT0, aqm.Mark, aqm.CE},
		{aqm.CE, aqm.Mark, aqm.CE},
		{aqm.NotECT, aqm.Mark, aqm.NotECT}, // never marked (RFC 3168 §6.1.1)
		{aqm.ECT1, aqm.Pass, aqm.ECT1},
		{aqm.ECT0, aqm.Drop, aqm.ECT0},
	}
	for _, tc := range tests {
		e := Event{Meta: aqm.Meta{ECN: tc.in}, Verdict: aqm.Verdict{Action: tc.action}}
		if got := e.ECNOut(); got != tc.want {
			t.Errorf("%v %v: ECNOut %v, want %v", tc.in, tc.action, got, tc.want)
		}
	}
}
