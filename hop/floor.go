package hop

import "sync"

// FloorStats is the machine's own timing floor while the hop runs: how
// late real-time threads that do nothing but sleep and wake (the floor
// probe, as cyclictest -S: one thread pinned to each CPU) woke up.
// Lateness of the owners beyond it is the hop's; up to it, the
// machine's (other real-time work, the kernel, the hypervisor).
//
// One thread per CPU, because a stall can be one CPU's alone: on a VM the
// host deschedules one virtual CPU for ms at a time (seen with
// sched_switch tracing: no event on one CPU for 5-9 ms while an owner
// woken there waited, the other CPU idle and on time), and an owner waits
// wherever its wake-up landed. A single unpinned probe sees only the CPU
// it happens to sleep on.
type FloorStats struct {
	Running  bool  // the probes run (Config.FloorProbe and they could start)
	RealTime bool  // they run SCHED_FIFO at the owners' priority
	CPUs     int   // CPUs probed, one probe thread pinned to each
	Period   int64 // their sleep, ns
	Wakes    uint64
	Worst    Worst // how late the latest of them woke, ns
}

// floorProbeEnv names the probe process: the hop runs its own executable
// with it set (see floorProbeMain), so the probe shares nothing with this
// process's runtime, garbage collector or locks.
const floorProbeEnv = "PI2HOP_FLOOR_PROBE"

// floorPeriod is the probe's sleep. cyclictest's default, 200 µs, cost
// the packets' path through a gateway: a wake-up took the probe ~40 µs of
// CPU time on the 2-vCPU VM (its schedstat over 5 s: 18.9 % of a core at
// 200 µs, 4.6 % at 1 ms), time that its CPU's kernel work for a ping
// (bridge, forwarding, NAT) or an owner waits for. Measured on that VM
// (200 pings, `run` and `share` with --delay 5ms, three sets of six
// interleaved rounds, median over the rounds of the p50 of the added RTT
// minus the probe-off one's): 200 µs +64, +50, +78 µs through `run` and
// +92 µs through `share`; 1 ms -1 and +22 µs through `run` and +6 µs
// through `share`, within the rounds' spread. (A probe on one CPU only,
// or a single unpinned one, also cost nothing measurable, but a stall can
// be one vCPU's alone: see FloorStats.) The stalls the probe is for are
// ms long (a vCPU the host stops for 5-100 ms); one of D ms reads as at
// least D - 1 ms late.
const floorPeriod = 1_000_000 // ns

// floorReport is how often the probe reports its worst wake-up: the
// intervals of its Worst.
const floorReport = 20_000_000 // ns

// floor is the parent's side of the running probes.
type floor struct {
	mu    sync.Mutex
	st    FloorStats
	wakes []uint64 // per probe
	rt    []bool   // per probe
	stop  func()
}

// record takes probe i's report: its worst wake-up over its last
// interval, its wake-ups so far and whether it runs real-time. Probe 0's
// reports close the intervals of st.Worst; the others' values fall into
// the interval open when they arrive, so an interval's worst is the
// worst of every CPU over about floorReport.
func (f *floor) record(i int, worst int64, wakes uint64, rt bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.st.Worst.Add(worst)
	if i == 0 {
		f.st.Worst.Close()
	}
	f.wakes[i], f.rt[i] = wakes, rt
	f.st.Wakes, f.st.RealTime = 0, true
	for k := range f.wakes {
		f.st.Wakes += f.wakes[k]
		f.st.RealTime = f.st.RealTime && f.rt[k]
	}
}

// exited notes that a probe is gone (killed, or it died).
func (f *floor) exited() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.st.Running = false
}

func (f *floor) stats() FloorStats {
	if f == nil {
		return FloorStats{}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.st
}
