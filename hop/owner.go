package hop

import (
	"errors"
	"fmt"
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
	spin     int64    // lead of the spin before a lone deadline, ns: spinAuto, spinOff or fixed
	late     [4]int64 // learnt wake-up lateness per sleepClass, ns (spinAuto)
	priority int      // SCHED_FIFO priority of the owner thread (0 = normal)

	nextStats int64
	// What the last ppoll reported readable (true when it was not asked).
	inReady, wakeReady bool
	lastTx             int64 // transmission time of the last packet sent, ns

	bufs    [][]byte
	sizes   []int
	slots   []int32
	scratch []byte // read target when every slot is in use
	events  []shaper.Event
	one     [1][]byte
	ev      shaper.Event // scratch event for taps of refused packets
	dropFn  func(aqm.Meta)
	st      DirStats

	// Shared with other goroutines.
	waker     waker
	stopping  atomic.Bool
	statsReq  atomic.Bool
	snap      atomic.Pointer[DirStats]
	seq       uint64
	published chan struct{} // a requested snapshot is out
	edits     chan editReq
	exited    chan struct{}
	reqMu     sync.Mutex // one stats request at a time
	drops     tun.DropCounter
	ringBase  uint64
	tid       atomic.Int32 // the owner's OS thread, for its CPU time
}

// Spin modes besides a fixed lead (Config.Spin > 0).
const (
	spinAuto = 0  // lead learnt from the wake-ups (Config.Spin 0)
	spinOff  = -1 // never spin (Config.Spin < 0)
)

type editReq struct {
	e     DirEdit
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
		events:    make([]shaper.Event, 0, 4*c.Batch+256),
		published: make(chan struct{}, 1),
		edits:     make(chan editReq),
		exited:    make(chan struct{}),
	}
	o.dropFn = o.droppedByChange
	o.st.Dir = d
	if err := o.waker.open(); err != nil {
		return nil, err
	}
	if dc, ok := in.(tun.DropCounter); ok {
		if n, err := dc.RingDrops(); err == nil {
			o.drops, o.ringBase = dc, n
		}
	}
	o.start = clock()
	o.publish(o.start)
	return o, nil
}

// run is the owner goroutine (see the package comment).
func (o *owner) run() (err error) {
	defer close(o.exited)
	if err := o.lockForRealTime(); err != nil {
		return err
	}
	defer func() { o.publish(clock()) }()
	o.nextStats = clock() + o.every
	o.inReady = true
	for !o.stopping.Load() {
		if o.wakeReady {
			o.waker.drain()
		}
		o.takeEdits()
		now := clock()
		o.release(now)
		var full bool
		var err error
		if o.inReady { // skip the read that would only say EAGAIN
			full, err = o.readBatch()
		}
		if err != nil {
			if errors.Is(err, os.ErrClosed) && o.stopping.Load() {
				return nil
			}
			return fmt.Errorf("hop: %s: read %s: %w", o.dir, o.in.Name(), err)
		}
		now = clock()
		o.release(now)
		if o.statsReq.Load() || now >= o.nextStats {
			o.publish(now)
			o.nextStats = now + o.every
		}
		if full {
			continue // more may be waiting: read again before sleeping
		}
		if err := o.wait(min(o.link.Next(), o.nextStats)); err != nil {
			return fmt.Errorf("hop: %s: wait: %w", o.dir, err)
		}
	}
	return nil
}

// readBatch reads up to a batch of packets into free slots and enqueues
// them. full reports that the batch was filled.
//
// The packets are stamped with the clock read after the read, never with
// a time taken before it: a packet that reached the TUN while the owner
// was writing released packets would otherwise get an arrival time from
// before it existed, and leave the delay line early (after a stall, by
// milliseconds). The link is brought up to that time first, as
// Link.Enqueue requires.
func (o *owner) readBatch() (full bool, err error) {
	k := min(len(o.bufs), len(o.slab.free))
	if k == 0 {
		return o.readWithoutBuffer()
	}
	for i := 0; i < k; i++ {
		o.slots[i], _ = o.slab.get()
		o.bufs[i] = o.slab.buf(o.slots[i])
	}
	n, err := o.in.TryRead(o.bufs[:k], o.sizes)
	for i := k - 1; i >= n; i-- {
		o.slab.put(o.slots[i])
	}
	if n == 0 {
		return false, err
	}
	now := clock()
	o.release(now)
	for i := 0; i < n; i++ {
		o.accept(o.slots[i], o.sizes[i], now)
	}
	return n == k, err
}

// readWithoutBuffer takes one packet into scratch and drops it: with every
// slot in use, dropping here is counted, while leaving it in the TUN ring
// would only move the loss into the kernel.
func (o *owner) readWithoutBuffer() (bool, error) {
	o.bufs[0] = o.scratch
	n, err := o.in.TryRead(o.bufs[:1], o.sizes)
	if n == 1 {
		now := clock()
		pkt := o.scratch[:o.sizes[0]]
		o.st.In++
		o.st.InBytes += uint64(len(pkt))
		o.st.NoBuffer++
		if o.tap != nil {
			o.ev = shaper.Event{Meta: aqm.MetaOf(pkt, -1), Verdict: aqm.Verdict{Action: aqm.Drop}, At: now}
			o.tap.Packet(int(o.dir), int(TapDrop), now, pkt, &o.ev)
		}
	}
	return n == 1, err
}

// accept enqueues one packet just read into slot.
func (o *owner) accept(slot int32, size int, now int64) {
	pkt := o.slab.buf(slot)[:size]
	o.st.In++
	o.st.InBytes += uint64(size)
	if !aqm.View(pkt).Valid() {
		o.st.Malformed++ // MetaOf reads it as Not-ECT: Classic queue
	}
	m := aqm.MetaOf(pkt, slot)
	if o.tap != nil {
		o.tap.Packet(int(o.dir), int(TapIn), now, pkt, nil)
	}
	v := o.link.Enqueue(m, now)
	if v.Action == aqm.Drop {
		o.st.QueueDrops[v.Reason]++
		if o.tap != nil {
			m.Arrival = now
			o.ev = shaper.Event{Meta: m, Verdict: v, At: now}
			o.tap.Packet(int(o.dir), int(TapDrop), now, pkt, &o.ev)
		}
		o.slab.put(slot)
	}
}

// release runs the link up to now and finishes every packet it let go.
func (o *owner) release(now int64) {
	o.events = o.link.Poll(now, o.events[:0])
	for i := range o.events {
		o.st.Lateness.Add(now - o.events[i].At)
		o.finish(&o.events[i])
	}
}

// finish writes out a released packet (setting CE if it was marked) or
// counts its drop, then frees its slot.
func (o *owner) finish(ev *shaper.Event) {
	slot := ev.Meta.Slot
	pkt := o.slab.buf(slot)[:ev.Meta.Len]
	defer o.slab.put(slot)
	if ev.Verdict.Action == aqm.Drop {
		o.st.QueueDrops[ev.Verdict.Reason]++
		if o.tap != nil {
			o.tap.Packet(int(o.dir), int(TapDrop), ev.At, pkt, ev)
		}
		return
	}
	if ev.Verdict.Action == aqm.Mark && aqm.View(pkt).SetCE() {
		o.st.Marked++
	}
	if ev.Dep > ev.Deq {
		o.lastTx = ev.Dep - ev.Deq
	}
	if ev.Verdict.Class == aqm.Classic {
		o.st.SojournC.Add(ev.Deq - ev.Meta.Arrival)
	} else {
		o.st.SojournL.Add(ev.Deq - ev.Meta.Arrival)
	}
	o.one[0] = pkt
	if _, err := o.out.Write(o.one[:]); err != nil {
		o.st.WriteErrors++
		if o.tap != nil {
			o.tap.Packet(int(o.dir), int(TapDrop), ev.At, pkt, ev)
		}
		return
	}
	o.st.Out++
	o.st.OutBytes += uint64(len(pkt))
	if o.tap != nil {
		o.tap.Packet(int(o.dir), int(TapOut), ev.At, pkt, ev)
	}
}

// publish stores a snapshot of the counters for readers.
func (o *owner) publish(now int64) {
	s := new(DirStats)
	*s = o.st
	o.seq++
	s.Seq = o.seq
	s.Taken = time.Now()
	s.Elapsed = now - o.start
	s.Kind = o.cfg.Queue.Kind
	s.Rate = fmt.Sprint(o.cfg.Link.Rate)
	if c, ok := o.cfg.Link.Rate.(shaper.Const); ok {
		s.Bps = c.BitsPerSecond
	}
	s.Delay = o.cfg.Link.Delay
	s.Queue = o.link.Queue().Stats(now)
	s.Link = o.link.Stats()
	s.Pending = o.link.Pending()
	o.snap.Store(s)
	if o.statsReq.Swap(false) {
		select {
		case o.published <- struct{}{}:
		default:
		}
	}
}

// snapshot returns a fresh snapshot if the owner runs, else the last one.
func (o *owner) snapshot(running bool) DirStats {
	o.reqMu.Lock()
	defer o.reqMu.Unlock()
	if running {
		select {
		case <-o.published:
		default:
		}
		o.statsReq.Store(true)
		o.waker.signal()
		select {
		case <-o.published:
		case <-o.exited:
		case <-time.After(time.Second):
		}
	}
	s := *o.snap.Load()
	if cpu := threadCPU(o.tid.Load()); cpu > 0 {
		s.CPU = cpu
	}
	if o.drops != nil {
		if n, err := o.drops.RingDrops(); err == nil && n >= o.ringBase {
			s.RingDrops = n - o.ringBase
		}
	}
	return s
}

// edit hands e to the owner and waits until it is applied.
func (o *owner) edit(e DirEdit) error {
	req := editReq{e: e, reply: make(chan error, 1)}
	select {
	case <-o.exited:
		return errors.New("not running")
	default:
	}
	o.waker.signal()
	select {
	case o.edits <- req:
	case <-o.exited:
		return errors.New("not running")
	}
	return <-req.reply
}

// takeEdits applies pending edits, between batches.
func (o *owner) takeEdits() {
	for {
		select {
		case req := <-o.edits:
			req.reply <- o.applyEdit(req.e)
		default:
			return
		}
	}
}

func (o *owner) applyEdit(e DirEdit) error {
	next, err := e.apply(o.cfg)
	if err != nil {
		return err
	}
	now := clock()
	o.release(now) // what was due happens under the old settings
	if e.Queue != nil && e.Queue.Kind == aqm.KindDualPI2 {
		q, ok := o.link.Queue().(*aqm.DualPI2)
		if !ok {
			return fmt.Errorf("queue is %T, not DualPI2", o.link.Queue())
		}
		if err := q.Change(e.Queue.DualPI2, now, o.dropFn); err != nil {
			return err
		}
	}
	if e.Rate != nil {
		o.link.SetRate(e.Rate, now)
	}
	if e.Delay != nil {
		o.link.SetDelay(*e.Delay)
	}
	if e.SetLoss {
		o.link.SetLoss(e.Loss)
	}
	o.cfg = next
	return nil
}

// droppedByChange frees a packet a shrinking queue limit dropped.
func (o *owner) droppedByChange(m aqm.Meta) {
	o.st.QueueDrops[aqm.ReasonLimit]++
	if o.tap != nil {
		now := clock()
		o.ev = shaper.Event{Meta: m, Verdict: aqm.Verdict{Action: aqm.Drop, Reason: aqm.ReasonLimit, Class: m.Class}, At: now}
		o.tap.Packet(int(o.dir), int(TapDrop), now, o.slab.buf(m.Slot)[:m.Len], &o.ev)
	}
	o.slab.put(m.Slot)
}

// signalStop asks the owner to return.
func (o *owner) signalStop() {
	o.stopping.Store(true)
	o.waker.signal()
}

// close releases the owner's descriptors; the owner must have returned.
func (o *owner) close() { o.waker.close() }
