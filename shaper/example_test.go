package shaper_test

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/shaper"
)

// Three 1500-byte packets arrive together at a 10 Mbit/s link with 5 ms of
// delay: each waits for the one before it, takes 1.2 ms on the wire, and
// comes out 5 ms later. Time is virtual: nothing sleeps.
func ExampleLink() {
	q, _ := aqm.NewFIFO(aqm.FIFOConfig{Limit: 100})
	cfg := shaper.Config{Rate: shaper.Const{BitsPerSecond: 10_000_000}, Delay: int64(5 * time.Millisecond)}
	l, _ := shaper.NewLink(cfg, q, rand.New(rand.NewPCG(1, 2)))

	var out []shaper.Event
	for i := range 3 {
		out = l.Poll(0, out) // always poll up to now before enqueueing
		l.Enqueue(aqm.Meta{Len: 1500, Slot: int32(i)}, 0)
	}
	for l.Pending() > 0 {
		out = l.Poll(l.Next(), out)
	}
	for _, e := range out {
		fmt.Printf("packet %d: %s, sojourn %v, on the wire %v-%v, out at %v\n", e.Meta.Slot, e.Verdict.Action,
			time.Duration(e.Sojourn()), time.Duration(e.Deq), time.Duration(e.Dep), time.Duration(e.At))
	}
	// Output:
	// packet 0: sent, sojourn 0s, on the wire 0s-1.2ms, out at 6.2ms
	// packet 1: sent, sojourn 1.2ms, on the wire 1.2ms-2.4ms, out at 7.4ms
	// packet 2: sent, sojourn 2.4ms, on the wire 2.4ms-3.6ms, out at 8.6ms
}
