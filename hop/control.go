package hop

// The control path of an owner: snapshots of its counters (publish on the
// owner, snapshot by any reader) and live edits (edit from any goroutine,
// takeEdits and applyEdit on the owner, between batches).

import (
	"errors"
	"fmt"
	"time"

	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/shaper"
)

// publish stores a snapshot of the counters for readers.
func (o *owner) publish(now int64) {
	o.st.Worst.Close()
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
	s.Pending = o.link.Pending() + len(o.wbufs) // released, held for a batch write
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
	if cpu, sys := threadCPU(o.tid.Load()); cpu > 0 {
		s.CPU, s.CPUSys = cpu-o.cpuBase.Load(), max(sys-o.sysBase.Load(), 0)
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
	if e.Queue != nil {
		if err := aqm.ChangeQueue(o.link.Queue(), *e.Queue, now, o.dropFn); err != nil {
			return err
		}
	}
	if e.Jitter != nil {
		if err := o.link.SetJitter(*e.Jitter); err != nil {
			return err
		}
	}
	if e.Aggregate != nil {
		if err := o.link.SetAggregate(*e.Aggregate, now); err != nil {
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
		o.tap.Packet(int(o.dir), int(TapDrop), now, o.whole(m.Slot, o.slab.buf(m.Slot)[:m.Len]), &o.ev)
	}
	o.slab.put(m.Slot)
}
