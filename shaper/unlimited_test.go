package shaper

import (
	"math/rand/v2"
	"testing"

	"github.com/pi2hop/pi2hop/aqm"
)

func TestUnlimitedSendsAtOnce(t *testing.T) {
	if got := (Unlimited{}).Finish(5, 1500); got != 5 {
		t.Errorf("Finish(5, 1500) = %d, want 5: no serialisation time", got)
	}
	q, err := aqm.NewDualPI2(aqm.DefaultConfig(), rand.New(rand.NewPCG(2, 0x5eed)))
	if err != nil {
		t.Fatal(err)
	}
	l := newTestLink(t, Config{Rate: Unlimited{}, Delay: 10 * ms}, q)
	// A burst of 1000 full-size packets in the same nanosecond: at any
	// finite rate they would queue; here each leaves the link as it
	// arrives and only the delay line holds them, none marked or dropped.
	var arrivals []arrival
	for i := 0; i < 1000; i++ {
		arrivals = append(arrivals, arrival{at: 1 * ms, len: 1500, ecn: aqm.ECT1})
	}
	evs := drive(t, l, arrivals, nil)
	if len(evs) != 1000 {
		t.Fatalf("%d events, want 1000", len(evs))
	}
	for _, e := range evs {
		if e.Verdict.Action != aqm.Pass || e.At != 11*ms {
			t.Fatalf("event %+v: want passed, out at 11 ms (arrival + delay)", e)
		}
	}
	if s := (Unlimited{}).String(); s != "unlimited" {
		t.Errorf("String() = %q", s)
	}
}
