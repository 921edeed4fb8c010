package hop

import (
	"runtime"
	"sync"
)

// extraProcs gives every running owner a P (a GOMAXPROCS slot) of its own.
//
// An owner spends its life blocked in ppoll on a locked thread. While it
// sleeps the runtime hands its P to other goroutines; when it wakes and
// no P is idle, the return from the system call queues the owner and
// hands it back to its thread through another one — two cross-CPU
// wake-ups, tens of µs on a VM, added to every packet that woke it. With
// GOMAXPROCS raised by the number of owners a P is nearly always idle for
// it. The extra Ps cost nothing while the owners sleep: they run no more
// goroutines than there are threads that want a CPU.
var extraProcs struct {
	mu sync.Mutex
	n  int
}

// reserveProcs raises GOMAXPROCS by n; releaseProcs lowers it again.
func reserveProcs(n int) {
	extraProcs.mu.Lock()
	defer extraProcs.mu.Unlock()
	extraProcs.n += n
	runtime.GOMAXPROCS(runtime.GOMAXPROCS(0) + n)
}

func releaseProcs(n int) {
	extraProcs.mu.Lock()
	defer extraProcs.mu.Unlock()
	n = min(n, extraProcs.n)
	extraProcs.n -= n
	if p := runtime.GOMAXPROCS(0) - n; p >= 1 {
		runtime.GOMAXPROCS(p)
	}
}
