package replay

import (
	"testing"

	"github.com/pi2hop/pi2hop/aqm"
)

func TestResultFigures(t *testing.T) {
	r := Result{FirstArrival: 1000, LastDeparture: 5000, Busy: 1000}
	if u := r.Utilisation(); u != 0.25 {
		t.Errorf("utilisation %v, want 0.25 (1000 ns busy of a 4000 ns span)", u)
	}
	if u := (&Result{FirstArrival: 7, LastDeparture: 7, Busy: 3}).Utilisation(); u != 0 {
		t.Errorf("empty span: utilisation %v, want 0", u)
	}
	var q QueueCounts
	if _, ok := q.SojournMean(); ok {
		t.Error("SojournMean of a queue nothing left: ok")
	}
	q.Marks[aqm.ReasonStep], q.Marks[aqm.ReasonCoupled] = 3, 4
	q.Drops[aqm.ReasonClassic], q.Drops[aqm.ReasonLoss] = 5, 1
	q.Dequeued, q.SojournSum = 4, 10
	if mean, ok := q.SojournMean(); q.Marked() != 7 || q.Dropped() != 6 || mean != 2 || !ok {
		t.Errorf("marked %d dropped %d mean %d %v; want 7, 6, 2 (integer ns), true", q.Marked(), q.Dropped(), mean, ok)
	}
}

// The summary lists, per kind, only the reasons the kind can give.
func TestReasons(t *testing.T) {
	marks, drops := Reasons(aqm.KindPIE)
	if len(marks) != 1 || marks[0] != aqm.ReasonPIE || len(drops) != 3 || drops[2] != aqm.ReasonLoss {
		t.Errorf("pie: marks %v drops %v; want [pie], [pie limit loss]", marks, drops)
	}
	marks, drops = Reasons(aqm.KindDualPI2)
	if len(marks) != 4 || marks[0] != aqm.ReasonStep || drops[0] != aqm.ReasonStep || drops[len(drops)-1] != aqm.ReasonLoss {
		t.Errorf("dualpi2: marks %v drops %v; want step first, drops step..loss", marks, drops)
	}
}
