package hop

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
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

// owner is one direction's driver: the loop of doc.go, on its own
// goroutine, over three parts split by concern, each in its own file: the
// data path that moves packets (dataPath, datapath.go), the pacer that
// decides when to sleep and when to write a batch (pacer, pacer.go) and
// the reporter that hands out counters (reporter, reporter.go). Only the
// fields under "Shared", and the reporter's shared ones, are touched by
// other goroutines.
type owner struct {
	h    *Hop
	dir  Dir
	pace pacer // first, and the data path's small fields next: the hot lines
	dataPath
	cfg   DirConfig
	start int64
	rep   reporter
	// What the last ppoll reported readable (true when it was not asked).
	inReady, wakeReady bool

	// Shared.
	waker    waker
	stopping atomic.Bool
	edits    chan editReq
	exited   chan struct{}
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
	o := &owner{h: h, dir: d, cfg: dir, edits: make(chan editReq), exited: make(chan struct{})}
	o.dataPath = dataPath{
		in: p, out: out, link: link, pace: &o.pace,
		slab:    newSlab(c.slots(dir), c.slotSize()),
		bufs:    make([][]byte, c.Batch),
		sizes:   make([]int, c.Batch),
		slots:   make([]int32, c.Batch),
		scratch: make([]byte, c.slotSize()),
		events:  make([]shaper.Event, 0, c.slots(dir)),
		wbufs:   make([][]byte, 0, writeBatch),
		wevs:    make([]shaper.Event, 0, writeBatch),
	}
	o.pace = pacer{spin: max(int64(c.Spin), spinOff), priority: c.Priority}
	_, o.pace.coalesces = out.(tun.OffloadCounter)
	o.rep.every = int64(c.StatsInterval)
	o.rep.published = make(chan struct{}, 1)
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
		f := newFlowObserver(rand.Uint32(), qprotScorer(dir), o.slab.slots())
		o.rep.flows = f.t
		o.obs.add(f)
	}
	o.st.Dir = d
	if err := o.waker.open(); err != nil {
		return nil, err
	}
	if dc, ok := in.(tun.DropCounter); ok {
		if n, err := dc.RingDrops(); err == nil {
			o.rep.drops, o.rep.ringBase = dc, n
		}
	}
	o.rep.setNames(dir.Link)
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
	o.rep.nextStats = clock() + o.rep.every
	o.inReady = true
	for !o.stopping.Load() {
		if o.wakeReady { // 1. edits
			o.waker.drain()
		}
		o.takeEdits()
		now := clock()
		o.release(now) // 2. release
		if o.rep.rtt != nil {
			o.rep.rtt.drain(now) // the up owner's arrivals, though none came this way
		}
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
		o.release(now)                                       // 5. release
		if o.rep.statsReq.Load() || now >= o.rep.nextStats { // 6. stats
			o.publish(now, false)
			o.rep.nextStats = now + o.rep.every
		}
		if full {
			continue // more may be waiting: read again before sleeping
		}
		deadline := min(o.link.Next(), o.rep.nextStats)
		if len(o.wbufs) > 0 { // held for a batch (see release)
			if now := clock(); !o.pace.holdWrite(now, now+minSleep) {
				o.flush() // too close to sleep for
			} else {
				deadline = min(deadline, o.pace.flushBy)
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
