package hop

// The control path of an owner: snapshots of its counters (publish on the
// owner, snapshot by any reader) and live changes (reconfigure from any
// goroutine, takeEdits and apply on the owner, between batches).

import (
	"errors"
	"time"

	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/shaper"
)

// publish closes the open Worst intervals (the histograms' too) and hands out a snapshot of the
// counters: into reqSnap when a reader asked for one (statsReq), which
// allocates nothing, and as a new DirStats in snap when store is set (the
// owner starting or returning) or when nobody asked (the periodic one, so
// that snap stays recent where nobody polls). A reader may poll often, as
// the lab's sampler does, without the owner allocating on its real-time
// thread, where a garbage collection in progress can make an allocating
// goroutine assist it.
func (o *owner) publish(now int64, store bool) {
	o.st.Worst.Close()
	o.st.SojournC.Close()
	o.st.SojournL.Close()
	o.st.Lateness.Close()
	if o.onThread { // not the publish before the owner runs
		if cpu := selfCPU(); cpu > 0 {
			if o.st.In == o.pubIn {
				o.st.IdleCPU += cpu - o.pubCPU
			}
			o.pubCPU, o.pubIn = cpu, o.st.In
		}
	}
	var bps uint64
	if c, ok := o.cfg.Link.Rate.(shaper.Const); ok {
		bps = c.BitsPerSecond
	}
	o.watch.observe(now, bps, o.st.InBytes, o.link.Stats().Busy, o.link.QueuedUntil(now))
	o.seq++
	req := o.statsReq.Swap(false)
	if req {
		o.fill(&o.reqSnap, now)
		if o.flowsReq.Swap(false) && o.flows != nil {
			o.copyFlows(o.reqFlows, now)
		}
	}
	if store || !req {
		s := new(DirStats)
		if req {
			*s = o.reqSnap
		} else {
			o.fill(s, now)
		}
		o.snap.Store(s)
	}
	if req {
		select {
		case o.published <- struct{}{}:
		default:
		}
	}
}

// fill writes a snapshot of the counters into s.
func (o *owner) fill(s *DirStats, now int64) {
	*s = o.st
	s.Seq = o.seq
	s.Taken = time.Now()
	s.Elapsed = now - o.start
	s.Kind = o.cfg.Queue.Kind
	s.Spec = o.cfg.Queue
	s.Jitter, s.Loss, s.Aggregate = o.linkNames[0], o.linkNames[1], o.linkNames[2]
	s.Rate = o.rateName
	s.Fault = o.faultName
	s.Bps = 0
	if c, ok := o.cfg.Link.Rate.(shaper.Const); ok {
		s.Bps = c.BitsPerSecond
	}
	s.Delay = o.cfg.Link.Delay
	s.Queue = o.link.Queue().Stats(now)
	s.Link = o.link.Stats()
	s.Link.Queued = o.link.QueuedUntil(now)
	s.NotBottleneck, s.PathBps = o.watch.elsewhere, o.watch.pathBps
	s.Pending = o.link.Pending() + len(o.wbufs) // released, held for a batch write
}

// snapshot returns a fresh snapshot if the owner runs, else the last one.
//
// A request is a handover: the reader, holding reqMu, sets statsReq; the
// owner takes it (Swap), fills reqSnap and signals published; the reader
// copies reqSnap before it lets go of reqMu, so the owner never writes
// reqSnap while a reader copies it. A reader that waited a second withdraws
// its request (CompareAndSwap) unless the owner has already taken it, in
// which case the owner is filling reqSnap and the reader waits for it. A
// reader given no fresh snapshot gets the newest one it can have: the last
// one served to a reader or the owner's last stored one, whichever is later
// (so that no reader sees the counters go back).
func (o *owner) snapshot(running bool) DirStats {
	s, _ := o.snapshotFlows(running, false, 0)
	return s
}

// snapshotFlows is snapshot, with the flow table's top flows when
// withFlows is set (top < 0: all of them). The owner copies its table
// into reqFlows in the same handover, and the reader turns that copy into
// figures. Without a fresh snapshot the table is read only once the owner
// has returned; a reader that timed out gets an empty one.
func (o *owner) snapshotFlows(running, withFlows bool, top int) (DirStats, FlowTable) {
	o.reqMu.Lock()
	defer o.reqMu.Unlock()
	var ft FlowTable
	flowsOK := false
	if withFlows && o.flows != nil && o.reqFlows == nil {
		o.reqFlows = new(flowCopy)
	}
	if running {
		select { // a token nobody took (none is left by the handover)
		case <-o.published:
		default:
		}
		if withFlows && o.flows != nil {
			o.flowsReq.Store(true)
		}
		o.statsReq.Store(true)
		o.waker.signal()
		fresh := true
		select {
		case <-o.published:
		case <-o.exited: // on its way out the owner served the request if it saw it
			fresh = false
		case <-time.After(time.Second):
			fresh = false
		}
		if !fresh && !o.statsReq.CompareAndSwap(true, false) {
			<-o.published // the owner took the request: it is filling reqSnap
			fresh = true
		}
		if fresh {
			o.served = o.reqSnap
			// The owner copied its table only if it saw the flag (a
			// request it took is always served in full).
			flowsOK = withFlows && o.flows != nil && !o.flowsReq.Swap(false)
		}
		o.flowsReq.Store(false)
	}
	if withFlows && o.flows != nil && !flowsOK {
		select {
		case <-o.exited: // the owner is gone: its table is the reader's now
			o.copyFlows(o.reqFlows, clock())
			flowsOK = true
		default:
		}
	}
	if flowsOK {
		ft = o.reqFlows.table(o.dir, top)
	} else {
		ft = FlowTable{Dir: o.dir.String(), Capacity: FlowTableSize}
	}
	s := o.served
	if last := o.snap.Load(); last.Seq > s.Seq {
		s = *last
	}
	if cpu, sys := threadCPU(o.tid.Load()); cpu > 0 {
		s.CPU, s.CPUSys = cpu-o.cpuBase.Load(), max(sys-o.sysBase.Load(), 0)
	}
	if o.drops != nil {
		if n, err := o.drops.RingDrops(); err == nil && n >= o.ringBase {
			s.RingDrops = n - o.ringBase
		}
	}
	return s, ft
}

// reconfigure hands next to the owner and waits until it is applied.
func (o *owner) reconfigure(next DirConfig) error {
	req := editReq{next: next, reply: make(chan error, 1)}
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

// takeEdits applies pending reconfigurations, between batches.
func (o *owner) takeEdits() {
	for {
		select {
		case req := <-o.edits:
			req.reply <- o.apply(req.next)
		default:
			return
		}
	}
}

// apply changes the link and queue to next (checked by Reconfigure),
// only the parts that differ from the running configuration.
func (o *owner) apply(next DirConfig) error {
	c := o.cfg.Changes(next)
	now := clock()
	o.release(now) // what was due happens under the old settings
	if c&ChangeQueue != 0 {
		if err := aqm.ChangeQueue(o.link.Queue(), next.Queue, now, o.dropFn); err != nil {
			return err
		}
	}
	if c&ChangeJitter != 0 {
		if err := o.link.SetJitter(next.Link.Jitter); err != nil {
			return err
		}
	}
	if c&ChangeAggregate != 0 {
		if err := o.link.SetAggregate(next.Link.Aggregate, now); err != nil {
			return err
		}
	}
	if c&ChangeRate != 0 {
		o.link.SetRate(next.Link.Rate, now) // a schedule starts over
	}
	if c&ChangeDelay != 0 {
		o.link.SetDelay(next.Link.Delay) // packets in the delay line keep theirs
	}
	if c&ChangeLoss != 0 {
		o.link.SetLoss(next.Link.Loss)
	}
	if c&ChangeFault != 0 {
		o.link.SetFault(next.Link.Fault, now) // after= counts from now
	}
	o.cfg = next
	o.setNames(next.Link)
	if o.flows != nil && c&(ChangeRate|ChangeQueue) != 0 {
		o.flows.setScorer(qprotScorer(next))
	}
	return nil
}

// droppedByChange frees a packet a shrinking queue limit dropped.
func (o *owner) droppedByChange(m aqm.Meta) {
	o.st.QueueDrops[aqm.ReasonLimit]++
	if o.flows != nil {
		o.flows.droppedHeld(o.flowOf[m.Slot], aqm.ReasonLimit)
	}
	if o.tap != nil {
		now := clock()
		o.ev = shaper.Event{Meta: m, Verdict: aqm.Verdict{Action: aqm.Drop, Reason: aqm.ReasonLimit, Class: m.Class}, At: now}
		o.tap.Packet(int(o.dir), int(TapDrop), now, o.whole(m.Slot, o.slab.buf(m.Slot)[:m.Len]), &o.ev)
	}
	o.slab.put(m.Slot)
}
