package hop

import "sync"

// FloorStats is the machine's own timing floor while the hop runs: how
// late a real-time thread that does nothing but sleep and wake (the
// floor probe, as cyclictest) woke up. Lateness of the owners beyond it
// is the hop's; up to it, the machine's (other real-time work, the
// kernel, the hypervisor).
type FloorStats struct {
	Running  bool  // the probe runs (Config.FloorProbe and it could start)
	RealTime bool  // it runs SCHED_FIFO at the owners' priority
	Period   int64 // its sleep, ns
	Wakes    uint64
	Worst    Worst // how late it woke, ns
}

// floorProbeEnv names the probe process: the hop runs its own executable
// with it set (see floorProbeMain), so the probe shares nothing with this
// process's runtime, garbage collector or locks.
const floorProbeEnv = "PI2HOP_FLOOR_PROBE"

// floorPeriod is the probe's sleep, as cyclictest's default interval.
const floorPeriod = 200_000 // ns

// floorReport is how often the probe reports its worst wake-up: the
// intervals of its Worst.
const floorReport = 20_000_000 // ns

// floor is the parent's side of a running probe.
type floor struct {
	mu   sync.Mutex
	st   FloorStats
	stop func()
}

func (f *floor) stats() FloorStats {
	if f == nil {
		return FloorStats{}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.st
}
