// Package wakeprobe measures how late the machine wakes real-time
// threads that do nothing but sleep and wake, as cyclictest -S does: one
// probe pinned to each CPU, each a process of its own. Lateness of a
// hop's owners beyond what the probes see is the hop's; up to it, the
// machine's (other real-time work, the kernel, the hypervisor).
//
// One probe per CPU, because a stall can be one CPU's alone: on a VM the
// host deschedules one virtual CPU for ms at a time while the others run
// on time, and an owner waits wherever its wake-up landed. A single
// unpinned probe sees only the CPU it happens to sleep on.
//
// A probe is this executable again, started with an environment variable
// that the package's init function recognises: any program that links
// this package can start probes.
package wakeprobe

import "errors"

// Report is one probe's report at the end of one of its intervals
// (ReportEvery long).
type Report struct {
	Probe    int    // which probe: 0 .. Of-1
	Of       int    // how many probes run: Probes.CPUs
	Worst    int64  // its latest wake-up over the interval, ns late
	Wakes    uint64 // its wake-ups so far
	RealTime bool   // it runs SCHED_FIFO at the priority asked for
}

// env names the probe process: Start runs this executable with it set
// (see probeMain), so the probe shares nothing with the caller's runtime,
// garbage collector or locks.
const env = "PI2HOP_WAKE_PROBE"

// Period is a probe's sleep, ns. It is longer than cyclictest's default
// (200 µs) because every wake-up costs the probe CPU time that its CPU's
// kernel work for a packet (bridge, forwarding, NAT) or an owner then
// waits for; at 1 ms the probe adds nothing measurable to a ping through
// the hop (docs/performance.md). The stalls the probe is for are ms long
// (a vCPU the host stops), and one of D ms still reads as at least D - 1
// ms late.
const Period = 1_000_000 // ns

// ReportEvery is how often a probe reports its worst wake-up, ns.
const ReportEvery = 20_000_000 // ns

// ErrUnsupported is returned by Start where the probe cannot run.
var ErrUnsupported = errors.New("wakeprobe: needs Linux (clock_nanosleep, CPU affinity, SCHED_FIFO)")

// Probes are the running probes, one per CPU.
type Probes struct {
	CPUs int // probes started, one pinned to each CPU the caller may run on
	stop func()
}

// Stop kills the probes and waits until their reports have ended.
func (p *Probes) Stop() { p.stop() }
