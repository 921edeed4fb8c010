package hop

import (
	"runtime"
	"testing"
)

// The owners' extra Ps and the lab's floor are one claim on GOMAXPROCS:
// each step's want is max(base, floors) + extra, and releasing all
// restores base.
func TestProcsClaims(t *testing.T) {
	base := runtime.GOMAXPROCS(0)
	check := func(step string, want int) {
		t.Helper()
		if got := runtime.GOMAXPROCS(0); got != want {
			t.Errorf("%s: GOMAXPROCS %d, want %d", step, got, want)
		}
	}
	reserveProcs(2)
	reserveProcs(2)
	check("two reservations of 2", base+4)
	releaseProcs(2)
	releaseProcs(2)
	check("both released", base)

	below := ProcsAtLeast(base - 1)
	check("a floor below base", base)
	lab := ProcsAtLeast(base + 3)
	check("a floor of base+3", base+3)
	reserveProcs(2)
	check("a hop under the floor", base+5)
	lab()
	lab() // release is idempotent: the other floor stays
	check("floor released while the hop runs", base+2)
	releaseProcs(2)
	check("hop stopped, low floor held", base)
	below()
	check("everything released", base)
	releaseProcs(1) // more than was reserved: nothing below base
	check("an extra release", base)
}
