package hop

import (
	"time"

	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/shaper"
)

// Snapshot is a consistent view of both directions, each taken by its
// owner between two batches.
type Snapshot struct {
	Name     string
	Running  bool
	Up, Down DirStats
	// WakeProbe is the machine's timing floor meanwhile (Config.WakeProbe).
	// Its JSON name on the control socket stays the one it had, so a
	// client and a running instance of different builds still agree.
	WakeProbe WakeProbeStats `json:"Floor"`
}

// Dir returns the stats of direction d.
func (s *Snapshot) Dir(d Dir) *DirStats {
	if d == Up {
		return &s.Up
	}
	return &s.Down
}

// DirStats is one direction. The packet counters balance:
// In = Out + Dropped() + Pending.
type DirStats struct {
	Dir     Dir
	Taken   time.Time // wall clock when the owner took it
	Elapsed int64     // ns since the direction started
	Seq     uint64    // increases with every snapshot

	Kind  string   // queue discipline
	Rate  string   // link rate as configured (tc units, or the trace)
	Bps   uint64   // link rate in bit/s when constant, else 0
	Delay int64    // one-way delay, ns
	Spec  aqm.Spec // the queue's configuration in force
	Fault string   // the ECN path fault's spec, "" for none (its counts are in Link.Faults)
	// The link's jitter, loss model and aggregation in force, as stats
	// prints them; "" when off.
	Jitter, Loss, Aggregate string
	Queue                   aqm.Stats // tc -s qdisc figures
	Link                    shaper.LinkStats

	In, InBytes   uint64 // packets read from the input device
	Out, OutBytes uint64 // packets written to the output device
	Marked        uint64 // written with CE set by the AQM
	Malformed     uint64 // not a well-formed IPv4/IPv6 header (forwarded as Classic Not-ECT)
	QueueDrops    [aqm.NumReasons]uint64
	NoBuffer      uint64 // dropped on arrival: every packet buffer in use
	WriteErrors   uint64 // dropped: the output device refused the packet
	Pending       int    // in the queue, on the wire, in the delay line or released and held for a batch write

	SojournC, SojournL Histogram // dequeue - arrival of forwarded packets, ns
	// Lateness is how late the owner handled each link event after its
	// scheduled time, ns: a release when the packet was written, a drop
	// when it was counted. The pacing error of the driver.
	Lateness Histogram
	// Worst is the largest of those latenesses, measured, for the run
	// and between any two snapshots (Worst.Since).
	Worst Worst

	// NotBottleneck says traffic flowed, the queue never built and the
	// link stayed under 80 % busy for NotBottleneckAfter: the path is
	// limited elsewhere, at about PathBps (the rate traffic arrived at).
	NotBottleneck bool
	PathBps       float64

	RingDrops uint64 // input TUN's tx_dropped since start: the kernel ring overflowed
	CPU       int64  // CPU time of the owner's thread since the owner took it, ns
	// CPUSys is the part of CPU spent in the kernel, ns, at the kernel's
	// tick resolution (10 ms): TUN reads and writes, waits, and whatever
	// the kernel does inside a TUN write (the receiving stack: on one
	// machine, the endpoints' own TCP processing).
	CPUSys int64
	// IdleCPU is the part of CPU spent in the owner's stats intervals
	// (Config.StatsInterval) that read no packet, ns: ticks and wake-ups
	// of an idle link, left out of the CPU per packet.
	IdleCPU int64
}

// Dropped returns all drops: by the queue and link, and by the hop.
func (s *DirStats) Dropped() uint64 {
	n := s.NoBuffer + s.WriteErrors
	for _, d := range s.QueueDrops {
		n += d
	}
	return n
}

// QueueBusy returns the fraction of time a packet waited in the queue.
func (s *DirStats) QueueBusy() float64 {
	if s.Elapsed <= 0 {
		return 0
	}
	return float64(s.Link.Queued) / float64(s.Elapsed)
}

// Utilisation returns the fraction of time the link was transmitting.
func (s *DirStats) Utilisation() float64 {
	if s.Elapsed <= 0 {
		return 0
	}
	return float64(s.Link.Busy) / float64(s.Elapsed)
}
