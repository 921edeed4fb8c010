package testbed

// labProcs is the least GOMAXPROCS the lab runs with; procs.AtLeast,
// the one place that sets GOMAXPROCS, adds the running hop's owners on
// top. The lab's timing-critical work runs on locked OS threads (the hop's two owners, each Prague and
// video sender) that sleep in ppoll; a thread that wakes needs a P before
// it can run Go code, and with only one P per core it waits while other
// goroutines hold them, up to the scheduler's 10 ms preemption tick. More
// Ps than cores let the kernel, which is better at it, share the CPUs
// instead. Measured on 2 cores (l4s-demo's L4S call): hop timing error
// p99 0.2 → 0.1 ms, call RTT p99 27–32 → 23.5 ms.
//
// The lab does not renice itself: tried at nice −10, its spinning threads
// starved the kernel's own packet work (ksoftirqd at nice 0) and the hop's
// timing error p99 grew from 0.1–0.2 ms to 4–9 ms.
const labProcs = 8
