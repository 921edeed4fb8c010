package hop

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/shaper"
	"github.com/pi2hop/pi2hop/tun"
)

// epoch anchors the hop's clock: ns on Go's monotonic clock, starting at
// one second so that no real event happens at time 0 (which Event uses
// for "never").
var epoch = time.Now().Add(-time.Second)

func clock() int64 { return int64(time.Since(epoch)) }

// UnixOffset turns the hop's clock (Tap's at, Event times) into Unix
// time: unix ns = at + UnixOffset().
func UnixOffset() int64 { return epoch.UnixNano() }

// owner is one direction's driver. Everything but the fields marked as
// shared is touched only by the owner goroutine (and by newOwner before
// it starts).
type owner struct {
	h        *Hop
	dir      Dir
	cfg      DirConfig
	in       tun.Pollable
	out      tun.Device
	link     *shaper.Link
	slab     *slab
	tap      Tap
	start    int64
	every    int64    // stats interval, ns
	spin     int64    // lead of the spin before a deadline, ns: spinAuto, spinOff or fixed
	late     [4]int64 // learnt wake-up lateness per sleepClass, ns (spinAuto)
	priority int      // SCHED_FIFO priority of the owner thread (0 = normal)

	nextStats int64
	// What the last ppoll reported readable (true when it was not asked).
	inReady, wakeReady bool
	lastTx             int64 // transmission time of the last packet sent, ns
	// coalesces: out joins consecutive packets of a flow into one system
	// call (the offload backend, tun.OffloadCounter), so holding released
	// packets for one write saves calls; with plain it saves none.
	coalesces bool

	bufs  [][]byte
	sizes []int
	slots []int32
	// With a PartialReader in and a PartialWriter out, segments keep the
	// partial checksum the kernel gave them from read to write (see
	// tun.PartialReader): pin and pout are set, rpart is the batch's flags
	// as read, part each slot's, wpart each one's in wbufs.
	pin      tun.PartialReader
	pout     tun.PartialWriter
	rpart    []bool
	part     []bool
	wpart    []bool
	scratch  []byte // read target when every slot is in use
	events   []shaper.Event
	wbufs    [][]byte       // released packets to write in one call (see flush)
	wevs     []shaper.Event // each one's event
	flushBy  int64          // when wbufs is written at the latest (see hold)
	ev       shaper.Event   // scratch event for taps of refused packets
	dropFn   func(aqm.Meta)
	st       DirStats
	rateName string // fmt.Sprint(cfg.Link.Rate), made when the rate is set
	// The link's jitter, loss and aggregation as DirStats names them,
	// made when they are set (setNames), so a snapshot allocates nothing.
	linkNames [3]string
	// faultName is the ECN path fault's spec ("" for none), made when set.
	faultName string
	reqSnap   DirStats // the snapshot a reader asked for (see snapshot)
	// flows is the flow table (nil with Config.NoFlows); flowOf is the
	// flow of each slot's packet, from its arrival to its fate.
	flows  *flowTable
	flowOf []int32
	// reqFlows is the copy of the table a reader asked for with its
	// snapshot (flowsReq); allocated by the first such reader.
	reqFlows *flowCopy

	// Shared with other goroutines.
	waker     waker
	stopping  atomic.Bool
	statsReq  atomic.Bool
	flowsReq  atomic.Bool // the stats request wants the flow table too
	snap      atomic.Pointer[DirStats]
	seq       uint64
	published chan struct{} // a requested snapshot is out
	edits     chan editReq
	exited    chan struct{}
	reqMu     sync.Mutex // one stats request at a time
	served    DirStats   // the last snapshot a reader got from reqSnap; under reqMu
	drops     tun.DropCounter
	ringBase  uint64
	tid       atomic.Int32 // the owner's OS thread, for its CPU time
	// The thread's CPU time (total, system) when the owner locked it.
	cpuBase, sysBase atomic.Int64
	// The thread's CPU time and In at the last publish on the owner's
	// thread (onThread), to count the CPU of the intervals that read no
	// packet (DirStats.IdleCPU).
	pubCPU int64
	pubIn  uint64
	// watch judges, at each publish, whether the hop is the bottleneck.
	watch    bottleneckWatch
	onThread bool
}

// qprotScorer is the Queue Protection flows are scored against: the
// direction's own when its queue is docsis, else DOCSIS's defaults on a
// link of the direction's rate (FLOOR depends on it).
func qprotScorer(dir DirConfig) aqm.QProtScorer {
	if dir.Queue.Kind == aqm.KindDOCSIS {
		return aqm.NewQProtScorer(dir.Queue.DOCSIS)
	}
	c := aqm.DefaultDOCSISConfig()
	if r, ok := dir.Link.Rate.(shaper.Const); ok {
		c.Rate = r.BitsPerSecond
	}
	return aqm.NewQProtScorer(c)
}

// constBps is the link's rate when constant, else 0.
func (o *owner) constBps() uint64 {
	if c, ok := o.cfg.Link.Rate.(shaper.Const); ok {
		return c.BitsPerSecond
	}
	return 0
}

// Spin modes besides a fixed lead (Config.Spin > 0).
const (
	spinAuto = 0  // lead learnt from the wake-ups (Config.Spin 0)
	spinOff  = -1 // never spin (Config.Spin < 0)
)

// editReq is a direction's next configuration, on its way to the owner.
type editReq struct {
	next  DirConfig
	reply chan error
}

func newOwner(h *Hop, d Dir, dir DirConfig, in, out tun.Device) (*owner, error) {
	p, ok := in.(tun.Pollable)
	if !ok {
		return nil, fmt.Errorf("device %s (%T) cannot be polled", in.Name(), in)
	}
	link, err := newLink(h.cfg, d, dir)
	if err != nil {
		return nil, err
	}
	c := h.cfg
	o := &owner{
		h: h, dir: d, cfg: dir, in: p, out: out, link: link,
		slab:      newSlab(c.slots(dir), c.slotSize()),
		every:     int64(c.StatsInterval),
		spin:      max(int64(c.Spin), spinOff),
		priority:  c.Priority,
		bufs:      make([][]byte, c.Batch),
		sizes:     make([]int, c.Batch),
		slots:     make([]int32, c.Batch),
		scratch:   make([]byte, c.slotSize()),
		events:    make([]shaper.Event, 0, c.slots(dir)),
		wbufs:     make([][]byte, 0, writeBatch),
		wevs:      make([]shaper.Event, 0, writeBatch),
		published: make(chan struct{}, 1),
		edits:     make(chan editReq),
		exited:    make(chan struct{}),
	}
	_, o.coalesces = out.(tun.OffloadCounter)
	if pin, ok := in.(tun.PartialReader); ok {
		if pout, ok := out.(tun.PartialWriter); ok {
			o.pin, o.pout = pin, pout
			o.rpart = make([]bool, c.Batch)
			o.part = make([]bool, o.slab.slots())
			o.wpart = make([]bool, 0, writeBatch)
		}
	}
	o.dropFn = o.droppedByChange
	if !c.NoFlows {
		o.flows = &flowTable{key: rand.Uint32()}
		o.flows.reset(qprotScorer(dir))
		o.flowOf = make([]int32, o.slab.slots())
		for i := range o.flowOf {
			o.flowOf[i] = otherFlow // and each page mapped before the owner runs
		}
	}
	o.st.Dir = d
	if err := o.waker.open(); err != nil {
		return nil, err
	}
	if dc, ok := in.(tun.DropCounter); ok {
		if n, err := dc.RingDrops(); err == nil {
			o.drops, o.ringBase = dc, n
		}
	}
	o.setNames(dir.Link)
	o.start = clock()
	o.publish(o.start, true)
	return o, nil
}

// run is the owner goroutine: the loop the package comment lists, step
// by step.
func (o *owner) run() (err error) {
	defer close(o.exited)
	if err := o.lockForRealTime(); err != nil {
		return err
	}
	defer func() { o.publish(clock(), true) }()
	o.nextStats = clock() + o.every
	o.inReady = true
	for !o.stopping.Load() {
		if o.wakeReady { // 1. edits
			o.waker.drain()
		}
		o.takeEdits()
		now := clock()
		o.release(now) // 2. release
		var full bool
		var err error
		if o.inReady { // 3. read and 4. enqueue; skip the read that would only say EAGAIN
			full, err = o.readBatch()
		}
		if err != nil {
			if errors.Is(err, os.ErrClosed) && o.stopping.Load() {
				return nil
			}
			return fmt.Errorf("hop: %s: read %s: %w", o.dir, o.in.Name(), err)
		}
		now = clock()
		o.release(now)                               // 5. release
		if o.statsReq.Load() || now >= o.nextStats { // 6. stats
			o.publish(now, false)
			o.nextStats = now + o.every
		}
		if full {
			continue // more may be waiting: read again before sleeping
		}
		deadline := min(o.link.Next(), o.nextStats)
		if len(o.wbufs) > 0 { // held for a batch (see release)
			if o.flushBy-clock() < minSleep {
				o.flush() // too close to sleep for
			} else {
				deadline = min(deadline, o.flushBy)
			}
		}
		if err := o.wait(deadline); err != nil { // 7. wait
			return fmt.Errorf("hop: %s: wait: %w", o.dir, err)
		}
	}
	o.finishInFlight()
	return nil
}

// finishInFlight releases, without reading any more, what the owner took
// in before it was told to stop, up to maxDrain. Hop.Drain waits until
// nothing is in flight, but packets read between its last look and the
// stop would otherwise be lost in the queue or delay line with an in
// record and no out: an "unseen" drop in the capture (seen: the last
// packet of a TCP flow through shell). Those are a few ms of arrivals, out
// within the delay and their serialisation.
func (o *owner) finishInFlight() {
	deadline := clock() + int64(maxDrain)
	defer o.flush() // what release held back
	for o.link.Pending() > 0 {
		now := clock()
		o.release(now)
		if o.link.Pending() == 0 || now >= deadline {
			return
		}
		// A plain sleep: the input stays readable, so ppoll would not wait.
		pause(max(min(o.link.Next(), deadline)-clock(), 25_000)) // at least 25 µs: no busy loop
	}
}

// signalStop asks the owner to return.
func (o *owner) signalStop() {
	o.stopping.Store(true)
	o.waker.signal()
}

// close releases the owner's descriptors; the owner must have returned.
func (o *owner) close() { o.waker.close() }

// setNames makes the names a snapshot gives the link's settings.
func (o *owner) setNames(l shaper.Config) {
	o.rateName = fmt.Sprint(l.Rate)
	o.faultName = faultName(l.Fault)
	o.linkNames = [3]string{}
	if l.Jitter.Amount > 0 {
		o.linkNames[0] = l.Jitter.String()
	}
	if l.Loss != nil {
		o.linkNames[1] = fmt.Sprint(l.Loss)
	}
	if l.Aggregate.On() {
		o.linkNames[2] = l.Aggregate.String()
	}
}
