// Package wakeprobe measures how late the machine wakes real-time
// threads that do nothing but sleep and wake, as cyclictest -S does: one
// probe pinned to each CPU, each a process of its own. Lateness of a
// hop's owners beyond what the probes see is the hop's; up to it, the
// machine's (other real-time work, the kernel, the hypervisor).
//
// One probe per CPU, because a stall can be one CPU's alone: on a VM the
// host deschedules one virtual CPU for ms at a time (seen with
// sched_switch tracing: no event on one CPU for 5-9 ms while an owner
// woken there waited, the other CPU idle and on time), and an owner waits
// wherever its wake-up landed. A single unpinned probe sees only the CPU
// it happens to sleep on.
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

// Period is a probe's sleep, ns. cyclictest's default, 200 µs, cost
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
// be one vCPU's alone: see the package comment.) The stalls the probe is
// for are ms long (a vCPU the host stops for 5-100 ms); one of D ms reads
// as at least D - 1 ms late.
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
