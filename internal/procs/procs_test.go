package procs

import (
	"runtime"
	"testing"
)

// The owners' extra Ps and the lab's minimum are one claim on GOMAXPROCS:
// each step's want is max(base, minimums) + extra, and releasing all
// restores base.
func TestProcsClaims(t *testing.T) {
	base := runtime.GOMAXPROCS(0)
	check := func(step string, want int) {
		t.Helper()
		if got := runtime.GOMAXPROCS(0); got != want {
			t.Errorf("%s: GOMAXPROCS %d, want %d", step, got, want)
		}
	}
	Reserve(2)
	Reserve(2)
	check("two reservations of 2", base+4)
	Release(2)
	Release(2)
	check("both released", base)

	below := AtLeast(base - 1)
	check("a minimum below base", base)
	lab := AtLeast(base + 3)
	check("a minimum of base+3", base+3)
	Reserve(2)
	check("a hop under the minimum", base+5)
	lab()
	lab() // release is idempotent: the other minimum stays
	check("minimum released while the hop runs", base+2)
	Release(2)
	check("hop stopped, low minimum held", base)
	below()
	check("everything released", base)
	Release(1) // more than was reserved: nothing below base
	check("an extra release", base)
}
