package testbed

// labProcs is the least GOMAXPROCS the lab runs with; procs.AtLeast,
// the one place that sets GOMAXPROCS, adds the running hop's owners on
// top. The lab's timing-critical work runs on locked OS threads (the
// hop's two owners, each Prague and video sender) that sleep in ppoll; a
// thread that wakes needs a P before it can run Go code, and with only
// one P per core it waits while other goroutines hold them, up to the
// scheduler's 10 ms preemption tick. More Ps than cores let the kernel,
// which is better at it, share the CPUs instead.
//
// The lab does not renice itself: its spinning threads at a higher
// priority would starve the kernel's own packet work (ksoftirqd runs at
// nice 0) and with it the hop's timing (docs/performance.md).
const labProcs = 8
