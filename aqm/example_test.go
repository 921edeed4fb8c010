package aqm_test

import (
	"fmt"
	"math/rand/v2"

	"github.com/pi2hop/pi2hop/aqm"
)

// A DualPI2 in virtual time: an L4S packet that waits more than the 1 ms
// step threshold is CE-marked; a Classic packet behind it is not; the PI
// update at 16 ms sees the Classic packet's 16 ms of queueing delay.
func ExampleDualPI2() {
	q, err := aqm.NewDualPI2(aqm.DefaultConfig(), rand.New(rand.NewPCG(1, 0x5eed)))
	if err != nil {
		panic(err)
	}
	const ms = 1_000_000
	q.Enqueue(aqm.Meta{ECN: aqm.ECT1, Len: 1200}, 0)
	q.Enqueue(aqm.Meta{ECN: aqm.ECT0, Len: 1500}, 0)

	m, v, _ := q.Dequeue(2 * ms)
	fmt.Printf("%v from %s: %s (%s) after %d ms\n", m.ECN, v.Class, v.Action, v.Reason, (2*ms-m.Arrival)/ms)

	q.Advance(16 * ms)
	s := q.Stats(16 * ms)
	fmt.Printf("p' = %.6f, delay_c = %d ms, next update at %d ms\n", aqm.ProbFloat(s.Prob), s.DelayC/ms, q.NextUpdate()/ms)

	m, v, _ = q.Dequeue(16 * ms)
	fmt.Printf("%v from %s: %s\n", m.ECN, v.Class, v.Action)
	// Output:
	// ECT(1) from L: marked (step) after 2 ms
	// p' = 0.051325, delay_c = 16 ms, next update at 32 ms
	// ECT(0) from C: sent
}
