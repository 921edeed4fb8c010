// Package procs is the one place that sets GOMAXPROCS in pi2hop. Two
// needs meet here, and setting it from each would undo the other (a lab
// restoring its old value under a running hop would take the hop's extra
// Ps away):
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
//   - minimums: a caller with more locked, timing-critical threads (the
//     lab's senders) asks for at least n Ps (AtLeast).
//
// GOMAXPROCS is max(base, minimums...) + extra, where base is what it was
// before the first claim; with no claim left it returns to base.
package procs

import (
	"runtime"
	"slices"
	"sync"
)

var claims struct {
	mu    sync.Mutex
	held  bool  // a claim is held and base is valid
	base  int   // GOMAXPROCS before the first claim
	extra int   // Ps reserved for running owners
	mins  []int // one entry per AtLeast not yet released
}

// apply sets GOMAXPROCS from the claims; claims.mu is held.
func apply() {
	if !claims.held {
		claims.base, claims.held = runtime.GOMAXPROCS(0), true
	}
	if claims.extra == 0 && len(claims.mins) == 0 {
		runtime.GOMAXPROCS(claims.base)
		claims.held = false
		return
	}
	n := claims.base
	if len(claims.mins) > 0 {
		n = max(n, slices.Max(claims.mins))
	}
	runtime.GOMAXPROCS(n + claims.extra)
}

// Reserve adds n Ps for running owners; Release takes them back.
func Reserve(n int) {
	claims.mu.Lock()
	defer claims.mu.Unlock()
	claims.extra += n
	apply()
}

func Release(n int) {
	claims.mu.Lock()
	defer claims.mu.Unlock()
	claims.extra -= min(n, claims.extra)
	apply()
}

// AtLeast keeps GOMAXPROCS at least n (plus the Ps running hops
// reserve) until release is called; release is idempotent.
func AtLeast(n int) (release func()) {
	claims.mu.Lock()
	defer claims.mu.Unlock()
	claims.mins = append(claims.mins, n)
	apply()
	var once sync.Once
	return func() {
		once.Do(func() {
			claims.mu.Lock()
			defer claims.mu.Unlock()
			if i := slices.Index(claims.mins, n); i >= 0 {
				claims.mins = slices.Delete(claims.mins, i, i+1)
			}
			apply()
		})
	}
}
