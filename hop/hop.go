package hop

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/internal/procs"
	"github.com/pi2hop/pi2hop/shaper"
	"github.com/pi2hop/pi2hop/tun"
)

// Hop forwards between two devices through one shaped link per direction.
// It owns the devices from New on and closes them in Close.
type Hop struct {
	cfg      Config
	built    Config // cfg as New built the buffers for: the live ranges
	up, down tun.Device
	dirs     [2]*owner

	mu  sync.Mutex // guards cfg's directions (Set), running, tap
	tap Tap
	// probes are the wake-up probes while Run runs them. Not under mu:
	// Run sets them before it starts the owners, while a Reconfigure
	// may hold mu waiting for those owners.
	probes  atomic.Pointer[probes]
	running bool
	stop    chan struct{} // closed by Close
	done    chan struct{} // closed when Run has returned
	once    sync.Once
	started atomic.Bool
}

// New builds a hop that reads client-to-server packets from up and writes
// them to down, and the reverse. Both devices must be tun.Pollable (TUN
// devices on Linux and tuntest.ChannelDevice are).
func New(cfg Config, up, down tun.Device) (*Hop, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	h := &Hop{cfg: cfg, built: cfg, up: up, down: down, stop: make(chan struct{}), done: make(chan struct{})}
	for i, d := range []struct {
		in, out tun.Device
		dir     DirConfig
	}{{up, down, cfg.Up}, {down, up, cfg.Down}} {
		o, err := newOwner(h, Dir(i), d.dir, d.in, d.out)
		if err != nil {
			h.closeOwners()
			return nil, fmt.Errorf("hop: %s: %w", Dir(i), err)
		}
		h.dirs[i] = o
	}
	if !cfg.NoRTT {
		down, up, err := newRTT(&h.dirs[Down].waker)
		if err != nil {
			h.closeOwners()
			return nil, fmt.Errorf("hop: rtt: %w", err)
		}
		h.dirs[Up].obs.add(up)
		h.dirs[Down].obs.add(down)
		h.dirs[Down].rep.rtt = down
	}
	return h, nil
}

// newLink builds a direction's queue and link with its own random streams.
func newLink(cfg Config, d Dir, dir DirConfig) (*shaper.Link, error) {
	q, err := aqm.NewQueue(dir.Queue, rand.New(rand.NewPCG(cfg.Seed, 0x5eed0+uint64(d))))
	if err != nil {
		return nil, err
	}
	lc := dir.Link
	lc.Origin = clock() // a rate schedule's time 0 is the hop's start
	return shaper.NewLink(lc, q, rand.New(rand.NewPCG(cfg.Seed, 0x1055+uint64(d))))
}

// Config returns the hop's configuration, with live edits applied.
func (h *Hop) Config() Config {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.cfg
}

// SetTap installs the capture tap; call it before Run.
func (h *Hop) SetTap(t Tap) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.tap = t
}

// Run forwards until ctx is done, Close is called or a device fails, then
// stops both owners and returns. The devices stay open until Close.
// Run may be called once.
func (h *Hop) Run(ctx context.Context) error {
	if !h.started.CompareAndSwap(false, true) {
		return errors.New("hop: Run called twice")
	}
	defer close(h.done)
	h.mu.Lock()
	select {
	case <-h.stop:
		h.mu.Unlock()
		return errors.New("hop: closed")
	default:
	}
	h.running = true
	tap := h.tap
	cfg := h.cfg
	h.mu.Unlock()

	procs.Reserve(len(h.dirs))
	defer procs.Release(len(h.dirs))
	if cfg.CPULatency >= 0 {
		req, err := requestCPULatency(cfg.CPULatency)
		if err != nil {
			cfg.Logger.Debug("hop: no CPU wake-up latency request", "err", err)
		} else {
			defer req.Close()
		}
	}
	// Go's sysmon stays a normal thread. Every owner system call is raw
	// (rawPpoll), so no owner ever waits for sysmon; and a real-time sysmon,
	// which sleeps its 20 µs rounds with no timer slack, would run at that
	// pace whenever goroutines of the process sit in system calls (the
	// endpoints in bench-hop, the lab's senders) and take their Ps away, at
	// the cost of their throughput (docs/design.md, docs/performance.md).
	if cfg.WakeProbe {
		p, err := startProbes(cfg.Priority)
		if err != nil {
			cfg.Logger.Debug("hop: no wake-up probe", "err", err)
		} else {
			defer p.stop()
			h.probes.Store(p)
		}
	}
	errs := make(chan error, 2)
	for _, o := range h.dirs {
		if tap != nil {
			o.obs.add(&tapObserver{tap: tap, dir: int(o.dir), part: o.part})
		}
		go func() { errs <- o.run() }()
	}
	cfg.Logger.Debug("hop running", "name", cfg.Name, "up", cfg.Up.String(), "down", cfg.Down.String())
	var first error
	waiting := 2
	select {
	case <-ctx.Done():
	case <-h.stop:
	case first = <-errs:
		waiting--
	}
	for _, o := range h.dirs {
		o.signalStop()
	}
	for ; waiting > 0; waiting-- {
		if err := <-errs; first == nil {
			first = err
		}
	}
	h.mu.Lock()
	h.running = false
	h.mu.Unlock()
	h.cfg.Logger.Debug("hop stopped", "name", h.cfg.Name)
	return first
}

// Reconfigure changes the running hop to next: start from Config and
// change what should change. It compares next with the running
// configuration and applies what differs, all or nothing: both directions
// are checked before either changes, then each owner applies its own
// between batches. What cannot change live is refused with the reason:
// anything outside the directions (MTU, seed, tuning), a queue's kind, or
// a rate, delay or queue limit beyond the live range of the buffers the
// hop was built with (LiveRange). A loss model
// is replaced only when next holds another one (DirConfig.Changes).
func (h *Hop) Reconfigure(next Config) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.running {
		return errors.New("hop: not running")
	}
	if err := h.cfg.fixedChange(next); err != nil {
		return err
	}
	cur := [2]DirConfig{h.cfg.Up, h.cfg.Down}
	dirs := [2]DirConfig{next.Up, next.Down}
	for i := range dirs {
		d, err := cur[i].liveChange(dirs[i])
		if err != nil {
			return fmt.Errorf("hop: %s: %w", Dir(i), err)
		}
		dirs[i] = d
	}
	// The buffers and the live ranges are those the hop was built with.
	if err := h.built.CheckLive(Config{Up: dirs[0], Down: dirs[1]}); err != nil {
		return err
	}
	for i, d := range dirs {
		if cur[i].Changes(d) == 0 {
			continue
		}
		if err := h.dirs[i].reconfigure(d); err != nil {
			// Checked above; an owner refusing now is a bug or a
			// stopped hop, and the other direction may have changed.
			return fmt.Errorf("hop: %s: %w", Dir(i), err)
		}
		if i == 0 {
			h.cfg.Up = d
		} else {
			h.cfg.Down = d
		}
	}
	h.cfg.Logger.Debug("hop changed", "name", h.cfg.Name, "up", h.cfg.Up.String(), "down", h.cfg.Down.String())
	return nil
}

// Stats returns a fresh snapshot when the hop is running (each owner
// takes one between batches) and the last one otherwise.
func (h *Hop) Stats() Snapshot {
	h.mu.Lock()
	running := h.running
	h.mu.Unlock()
	p := h.probes.Load()
	s := Snapshot{Name: h.cfg.Name, Running: running, WakeProbe: p.stats()}
	for i, o := range h.dirs {
		*s.Dir(Dir(i)) = o.snapshot(running)
	}
	return s
}

// StatsFlows is Stats with each direction's flow table (up, down): its
// top flows by rate (top < 0: all), taken in the same handover as the
// counters. The owner copies its table for it, which takes it longer than
// a plain snapshot: poll it at the pace a person reads, not a sampler's.
func (h *Hop) StatsFlows(top int) (Snapshot, [2]FlowTable) {
	h.mu.Lock()
	running := h.running
	h.mu.Unlock()
	p := h.probes.Load()
	s := Snapshot{Name: h.cfg.Name, Running: running, WakeProbe: p.stats()}
	var ft [2]FlowTable
	var rj *rttJoin
	if h.dirs[Down].rep.rtt != nil {
		rj = &rttJoin{index: map[rttKey]*rttJoined{}}
	}
	for _, d := range []Dir{Down, Up} { // the RTT table's copy first: both tables join it
		*s.Dir(d), ft[d] = h.dirs[d].snapshotFlows(running, true, top, rj)
	}
	return s, ft
}

// Drain waits, while the hop keeps forwarding, until nothing is in flight
// in either direction (queued, on the wire or in the delay line) or ctx
// is done, so that stopping the hop loses nothing it already took in.
// Packets that keep arriving keep it waiting: bound it with ctx
// (DrainBound is what the queues and delay lines can hold). It returns
// nil at once when the hop is not running.
func (h *Hop) Drain(ctx context.Context) error {
	t := time.NewTicker(drainPoll)
	defer t.Stop()
	for {
		s := h.Stats()
		if !s.Running || s.Up.Pending == 0 && s.Down.Pending == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("hop: drain: %d packets up and %d down still in flight: %w", s.Up.Pending, s.Down.Pending, ctx.Err())
		case <-t.C:
		}
	}
}

// drainPoll is how often Drain looks at the owners' counters.
const drainPoll = 2 * time.Millisecond

// DrainBound is how long delivering what the hop holds now can take at
// most: per direction its one-way delay plus the queue's backlog at the
// link's rate (a rate trace counts as 1 Mbit/s), plus a margin, capped at
// maxDrain.
func (h *Hop) DrainBound() time.Duration {
	s := h.Stats()
	var d time.Duration
	for _, ds := range []*DirStats{&s.Up, &s.Down} {
		bps := ds.Bps
		if bps == 0 {
			bps = 1_000_000
		}
		ser := time.Duration(float64(ds.Queue.BacklogBytes) * 8 / float64(bps) * 1e9)
		d = max(d, time.Duration(ds.Delay)+ser)
	}
	return min(d+drainMargin, maxDrain)
}

// Drain's margin and cap: the owners' wake-ups, and "a few seconds".
const (
	drainMargin = 200 * time.Millisecond
	maxDrain    = 5 * time.Second
)

// Close stops Run if it is running, waits for it, and closes both
// devices. It is idempotent.
func (h *Hop) Close() error {
	var err error
	h.once.Do(func() {
		h.mu.Lock()
		close(h.stop)
		h.mu.Unlock()
		if h.started.Load() {
			<-h.done
		}
		h.closeOwners()
		err = errors.Join(h.up.Close(), h.down.Close())
	})
	return err
}

func (h *Hop) closeOwners() {
	for _, o := range h.dirs {
		if o != nil {
			o.close()
		}
	}
}

// String is a direction's settings in words, for logs and the CLI: rate,
// delay and loss when set, queue kind ("10mbit delay 10ms loss 1% dualpi2").
func (d DirConfig) String() string {
	s := fmt.Sprint(d.Link.Rate)
	if d.Link.Delay > 0 {
		s += fmt.Sprintf(" delay %v", time.Duration(d.Link.Delay))
	}
	if d.Link.Loss != nil {
		s += fmt.Sprintf(" loss %v", d.Link.Loss)
	}
	if d.Link.Fault.On() {
		s += " ecn-fault " + d.Link.Fault.String()
	}
	return s + " " + d.Queue.Kind
}

// faultName is a fault's spec for stats, "" when there is none.
func faultName(f shaper.Fault) string {
	if !f.On() {
		return ""
	}
	return f.String()
}
