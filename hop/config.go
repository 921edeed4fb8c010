package hop

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"time"

	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/shaper"
	"github.com/pi2hop/pi2hop/tun"
)

// DirConfig is one direction's link and queue discipline.
type DirConfig struct {
	Link  shaper.Config
	Queue aqm.Spec
}

// Config is a whole hop.
type Config struct {
	Name     string // instance name, for logs and stats
	Up, Down DirConfig
	Seed     uint64 // random loss and AQM rolls: same seed, same decisions
	MTU      int    // largest packet, bytes (default 1500); sizes the buffers
	// TUN is the backend of the devices a topology opens for the hop
	// (topology.NewPair, NewGateway): tun.BackendOffload
	// (the default, "") falls back to plain when the kernel refuses it.
	TUN tun.Backend

	// Tuning; zero means the default.
	Batch int // packets read per wake (default 64)
	Slots int // packet buffers per direction (default: from queue limit, rate and delay)
	// LineRate, if more than the link's rate, is the rate the delay line
	// is sized for (bit/s): a topology whose users unthrottle live (`set
	// --rate unlimited`, the share's documented workflow) passes
	// UnlimitedLineRate, so that edit fits the buffers at the delay given.
	LineRate      uint64
	StatsInterval time.Duration // how often the owners publish stats (default 100ms)
	// Spin is how long before a packet's deadline the owner stops
	// sleeping and spins, to cut wake-up lateness (packets leaving closer
	// than 25 µs apart are batched instead). Zero (the default) learns it
	// from the timer's own lateness, kept under a quarter of each wait; a
	// fixed value is not capped, so one near the gap between packets spins
	// a whole core. Negative: never spin.
	Spin time.Duration
	// CPULatency is the wake-up latency the hop asks of the CPUs' idle
	// states while it runs: a PM QoS request on /dev/cpu_dma_latency, as
	// cyclictest and tuned's latency profiles make. Zero (the default)
	// keeps idle CPUs polling instead of halting: on a VM a halted vCPU
	// wakes through the host, several times per packet through the hop, and
	// that shows in the idle RTT (docs/performance.md).
	// Negative: no request. Without the privilege the request is skipped.
	CPULatency time.Duration
	// Priority is the SCHED_FIFO priority (1..99) of the owner threads
	// when the process may set one (default 10; negative: normal threads).
	Priority int
	// WakeProbe runs probe processes beside the hop that measure the
	// machine's own timing floor (WakeProbeStats), so the owners' lateness
	// can be judged against it. It wakes every 1 ms on each CPU, and each
	// wake-up costs the probe some CPU time (docs/performance.md).
	WakeProbe bool
	// NoFlows turns the per-flow table off (FlowTable): the owners then
	// count nothing per flow. Benchmarks measure its cost with it.
	NoFlows bool
	// NoRTT turns the passive RTT table off (Flow.RTT, Hop.RTTFlows): the
	// owners then time no round trip. Benchmarks measure its cost with it.
	NoRTT  bool
	Logger *slog.Logger // nil: no logs
}

// Defaults for Config's tuning fields.
const (
	DefaultMTU           = aqm.DefaultMTU
	DefaultBatch         = 64
	DefaultStatsInterval = 100 * time.Millisecond
	DefaultPriority      = 10
	maxSlots             = 1 << 16
	// assumedPeakRate sizes the delay line for rates that are not constant.
	assumedPeakRate = 1_000_000_000
	// UnlimitedLineRate is what the delay line of a link that is not a
	// constant rate (shaper.Unlimited, a trace) is sized for.
	UnlimitedLineRate = assumedPeakRate
)

// withDefaults fills in the zero tuning fields.
func (c Config) withDefaults() Config {
	if c.MTU == 0 {
		c.MTU = DefaultMTU
	}
	if c.Batch == 0 {
		c.Batch = DefaultBatch
	}
	if c.StatsInterval == 0 {
		c.StatsInterval = DefaultStatsInterval
	}
	if c.Priority == 0 {
		c.Priority = DefaultPriority
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// Validate checks c (after defaults) without building anything heavy.
func (c Config) Validate() error {
	c = c.withDefaults()
	if c.MTU < 576 || c.MTU > 65535 {
		return fmt.Errorf("hop: MTU %d: want 576..65535", c.MTU)
	}
	if c.Batch < 1 || c.Batch > 1024 {
		return fmt.Errorf("hop: batch %d: want 1..1024", c.Batch)
	}
	if c.Slots < 0 || c.Slots > maxSlots*4 {
		return fmt.Errorf("hop: %d slots: want 0 (automatic) up to %d", c.Slots, maxSlots*4)
	}
	if c.Priority > 99 {
		return fmt.Errorf("hop: priority %d: want 1..99 (negative: no real-time priority)", c.Priority)
	}
	if c.Spin > time.Millisecond {
		return fmt.Errorf("hop: spin %v: want at most 1ms (negative: off)", c.Spin)
	}
	if c.CPULatency > time.Second {
		return fmt.Errorf("hop: CPU latency %v: want at most 1s (negative: no request)", c.CPULatency)
	}
	if c.TUN != "" {
		if _, err := tun.ParseBackend(string(c.TUN)); err != nil {
			return fmt.Errorf("hop: %w", err)
		}
	}
	if c.StatsInterval < time.Millisecond {
		return fmt.Errorf("hop: stats interval %v: want >= 1ms", c.StatsInterval)
	}
	for _, d := range []struct {
		name string
		dir  DirConfig
	}{{"up", c.Up}, {"down", c.Down}} {
		if err := d.dir.validate(); err != nil {
			return fmt.Errorf("hop: %s: %w", d.name, err)
		}
	}
	return nil
}

func (d DirConfig) validate() error {
	if d.Link.Rate == nil {
		return errors.New("no rate")
	}
	if d.Link.Delay < 0 {
		return fmt.Errorf("delay %v: must be >= 0", time.Duration(d.Link.Delay))
	}
	return d.Queue.Validate()
}

// slots returns how many packet buffers a direction needs: everything the
// queue may hold, what the delay line holds at full rate (full-size
// packets, at least minLineSlots), and two batches in hand.
func (c Config) slots(d DirConfig) int {
	if c.Slots > 0 {
		return c.Slots
	}
	n := float64(c.fixedSlots(d)) + max(math.Ceil(c.inFlight(d, c.lineRate(d), d.Link.Delay)), minLineSlots)
	return int(min(n, maxSlots))
}

// minLineSlots is the delay line's least share of the buffers, so a live
// `set` may add some delay to a hop started with none (256 full-size
// packets: 30 ms at 100 Mbit/s, 300 ms at 10 Mbit/s; 384 KiB at a 1500
// MTU).
const minLineSlots = 256

// fixedSlots are the buffers a direction needs whatever its rate and
// delay: the queue's limit, two batches in hand, a write batch released
// and held for its write (see dataPath.release) and a margin.
func (c Config) fixedSlots(d DirConfig) int {
	return min(d.Queue.Limit(), maxSlots) + 2*c.Batch + writeBatch + 16
}

// inFlight is how many full-size packets the delay line holds at rate
// bits/s with one-way delay ns.
func (c Config) inFlight(d DirConfig, rate uint64, delay int64) float64 {
	return float64(rate) / 8 * float64(delay) / 1e9 / float64(c.MTU)
}

// lineRate is the rate the delay line is sized for: the link's peak, or
// LineRate if that is more.
func (c Config) lineRate(d DirConfig) uint64 { return max(peakRate(d), c.LineRate) }

// peakRate is the link's highest rate: a constant one's, else assumed.
func peakRate(d DirConfig) uint64 {
	if r, ok := d.Link.Rate.(shaper.Const); ok {
		return r.BitsPerSecond
	}
	return assumedPeakRate
}

// fits checks that a live change to next keeps within the have buffers
// a running direction was built with: they are allocated once, before
// the owner starts, so a higher rate or delay than they hold is refused
// with what they do hold, rather than dropping packets for want of a
// buffer. Explicit Slots are the user's sizing and not checked.
func (c Config) fits(next DirConfig, have int) error {
	if c.Slots > 0 || c.slots(next) <= have {
		return nil
	}
	rate, delay := c.lineRate(next), next.Link.Delay
	line := have - c.fixedSlots(next) // full-size packets the delay line can hold
	if line < 0 {
		line = 0
	}
	bits := float64(line) * float64(c.MTU) * 8
	holdDelay := time.Duration(bits / float64(rate) * 1e9).Round(time.Millisecond)
	or := ""
	if delay > 0 {
		or = fmt.Sprintf(", or %s at %v", shaper.FormatRate(uint64(bits/(float64(delay)/1e9))), time.Duration(delay))
	}
	return fmt.Errorf("delay %v at %s needs %d packet buffers, the hop has %d: they hold %v of delay at %s%s; restart the hop with the new rate and delay to size its buffers for them",
		time.Duration(delay), shaper.FormatRate(rate), c.slots(next), have, holdDelay, shaper.FormatRate(rate), or)
}

// slotSize is the buffer per packet: the MTU rounded up to 64 bytes.
func (c Config) slotSize() int { return (c.MTU + 63) &^ 63 }

// Change is a set of the parts of a direction that differ between two
// configurations: what a reconfiguration applies.
type Change uint8

// The parts of a direction.
const (
	ChangeRate Change = 1 << iota
	ChangeDelay
	ChangeLoss
	ChangeJitter
	ChangeAggregate
	ChangeQueue
	ChangeFault
)

// changeNames name the parts in Change's bit order.
var changeNames = []string{"rate", "delay", "loss", "jitter", "aggregate", "queue", "fault"}

// String lists the parts, "rate+delay", or says "none".
func (c Change) String() string {
	var parts []string
	for i, n := range changeNames {
		if c&(1<<i) != 0 {
			parts = append(parts, n)
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, "+")
}

// Changes returns what differs from d to next. Rates compare as rates
// (shaper.SameRate: a trace read again from its file is unchanged). A loss
// model compares by identity: one with state (Gilbert-Elliott) starts over
// when it is replaced, so a change that keeps the loss passes the running
// model back.
func (d DirConfig) Changes(next DirConfig) Change {
	var c Change
	if !shaper.SameRate(d.Link.Rate, next.Link.Rate) {
		c |= ChangeRate
	}
	if d.Link.Delay != next.Link.Delay {
		c |= ChangeDelay
	}
	if d.Link.Loss != next.Link.Loss {
		c |= ChangeLoss
	}
	if d.Link.Jitter != next.Link.Jitter {
		c |= ChangeJitter
	}
	if d.Link.Aggregate != next.Link.Aggregate {
		c |= ChangeAggregate
	}
	if d.Queue != next.Queue {
		c |= ChangeQueue
	}
	if d.Link.Fault != next.Link.Fault {
		c |= ChangeFault
	}
	return c
}

// liveChange checks that a running direction d may become next: the
// changed jitter and burst model are valid, the queue keeps its kind (and
// what else aqm.Spec.LiveChange requires), and next is a valid direction.
// It returns next holding d's rate when the two are the same rate, so the
// running rate value stays.
func (d DirConfig) liveChange(next DirConfig) (DirConfig, error) {
	c := d.Changes(next)
	if c&ChangeRate == 0 {
		next.Link.Rate = d.Link.Rate
	}
	if next.Link.Origin != d.Link.Origin {
		return next, errors.New("origin cannot change while the hop runs: a rate set live starts at the change")
	}
	if c&ChangeJitter != 0 {
		if err := next.Link.Jitter.Validate(); err != nil {
			return next, err
		}
	}
	if c&ChangeAggregate != 0 {
		if err := next.Link.Aggregate.Validate(); err != nil {
			return next, err
		}
	}
	if c&ChangeQueue != 0 {
		if err := d.Queue.LiveChange(next.Queue); err != nil {
			return next, err
		}
	}
	return next, next.validate()
}

// fixedChange refuses a change to what a running hop was built with: the
// fields outside the directions.
func (c Config) fixedChange(next Config) error {
	for _, f := range []struct {
		name string
		same bool
		why  string
	}{
		{"name", c.Name == next.Name, "it names the hop in logs and stats"},
		{"MTU", c.MTU == next.MTU, "it sizes the packet buffers, allocated at start"},
		{"seed", c.Seed == next.Seed, "the random streams are seeded at start"},
		{"TUN backend", c.TUN == next.TUN, "the devices are open"},
		{"batch", c.Batch == next.Batch, "it sizes the buffers, allocated at start"},
		{"slots", c.Slots == next.Slots, "the buffers are allocated at start"},
		{"line rate", c.LineRate == next.LineRate, "it sized the buffers, allocated at start"},
		{"stats interval", c.StatsInterval == next.StatsInterval, "the owners take it at start"},
		{"spin", c.Spin == next.Spin, "the owners take it at start"},
		{"CPU latency", c.CPULatency == next.CPULatency, "it is requested when Run starts"},
		{"priority", c.Priority == next.Priority, "the owner threads take it at start"},
		{"wake-up probe", c.WakeProbe == next.WakeProbe, "it starts with Run"},
		{"flow table", c.NoFlows == next.NoFlows, "the owners allocate it at start"},
		{"RTT table", c.NoRTT == next.NoRTT, "the owners allocate it at start"},
		{"logger", c.Logger == next.Logger, "it is taken at start"},
	} {
		if !f.same {
			return fmt.Errorf("hop: %s cannot change while the hop runs: %s; restart it", f.name, f.why)
		}
	}
	return nil
}
