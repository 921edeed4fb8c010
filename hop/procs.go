package hop

import (
	"runtime"
	"slices"
	"sync"
)

// procs is the one place that sets GOMAXPROCS in pi2hop. Two needs meet
// here, and setting it from each would undo the other (a lab restoring
// its old value under a running hop took the hop's extra Ps away):
//
//   - extra: every running owner gets a P of its own. An owner spends its
//     life blocked in ppoll on a locked thread. While it sleeps the
//     runtime hands its P to other goroutines; when it wakes and no P is
//     idle, the return from the system call queues the owner and hands it
//     back to its thread through another one — two cross-CPU wake-ups,
//     tens of µs on a VM, added to every packet that woke it. With
//     GOMAXPROCS raised by the number of owners a P is nearly always idle
//     for it. The extra Ps cost nothing while the owners sleep: they run
//     no more goroutines than there are threads that want a CPU.
//   - floors: a caller with more locked, timing-critical threads (the
//     lab's senders) asks for at least n Ps (ProcsAtLeast).
//
// GOMAXPROCS is max(base, floors...) + extra, where base is what it was
// before the first claim; with no claim left it returns to base.
var procs struct {
	mu     sync.Mutex
	held   bool  // a claim is held and base is valid
	base   int   // GOMAXPROCS before the first claim
	extra  int   // Ps reserved for running owners
	floors []int // one entry per ProcsAtLeast not yet released
}

// applyProcs sets GOMAXPROCS from the claims; procs.mu is held.
func applyProcs() {
	if !procs.held {
		procs.base, procs.held = runtime.GOMAXPROCS(0), true
	}
	if procs.extra == 0 && len(procs.floors) == 0 {
		runtime.GOMAXPROCS(procs.base)
		procs.held = false
		return
	}
	n := procs.base
	if len(procs.floors) > 0 {
		n = max(n, slices.Max(procs.floors))
	}
	runtime.GOMAXPROCS(n + procs.extra)
}

// reserveProcs adds n Ps for running owners; releaseProcs takes them back.
func reserveProcs(n int) {
	procs.mu.Lock()
	defer procs.mu.Unlock()
	procs.extra += n
	applyProcs()
}

func releaseProcs(n int) {
	procs.mu.Lock()
	defer procs.mu.Unlock()
	procs.extra -= min(n, procs.extra)
	applyProcs()
}

// ProcsAtLeast keeps GOMAXPROCS at least n (plus the Ps running hops
// reserve) until release is called; release is idempotent.
func ProcsAtLeast(n int) (release func()) {
	procs.mu.Lock()
	defer procs.mu.Unlock()
	procs.floors = append(procs.floors, n)
	applyProcs()
	var once sync.Once
	return func() {
		once.Do(func() {
			procs.mu.Lock()
			defer procs.mu.Unlock()
			if i := slices.Index(procs.floors, n); i >= 0 {
				procs.floors = slices.Delete(procs.floors, i, i+1)
			}
			applyProcs()
		})
	}
}
