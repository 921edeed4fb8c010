package hop

// The reporter of an owner: snapshots of its counters (publish on the
// owner, snapshot by any reader), its thread's CPU time and the copy of
// its flow table.

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pi2hop/pi2hop/rtt"
	"github.com/pi2hop/pi2hop/shaper"
	"github.com/pi2hop/pi2hop/tun"
)

// reporter is what an owner keeps to hand out its counters. The fields
// under "Shared" are touched by readers too; the rest by the owner alone
// (and by newOwner before it starts).
type reporter struct {
	every     int64 // stats interval, ns
	nextStats int64 // when the next periodic snapshot is due
	seq       uint64
	// The names a snapshot gives the link's settings, made when they are
	// set (setNames), so a snapshot allocates nothing: the rate
	// (fmt.Sprint of it), the jitter, loss and aggregation as DirStats
	// names them, the ECN path fault's spec ("" for none).
	rateName  string
	linkNames [3]string
	faultName string
	reqSnap   DirStats // the snapshot a reader asked for (see snapshot)
	// stored are the buffers a stored snapshot is written into (see
	// storeSnap): one in snap (the last stored), one held by the reader
	// copying it (newerStored), one to write.
	stored [3]DirStats
	// flows is the flow table (nil with Config.NoFlows); reqFlows is the
	// copy of it a reader asked for with its snapshot (flowsReq),
	// allocated by the first such reader.
	flows    *flowCounters
	reqFlows *flowCopy
	// rtt is the hop's RTT table, the down owner's (nil on the up owner
	// and with Config.NoRTT); reqRTT and reqRTTStats are the copy of it a
	// reader asked for (rttReq), allocated by the first such reader.
	rtt         *rttTable
	reqRTT      *rtt.Snapshot
	reqRTTStats rtt.Stats
	// watch judges, at each publish, whether the hop is the bottleneck.
	watch bottleneckWatch

	// Shared.
	statsReq  atomic.Bool
	flowsReq  atomic.Bool // the stats request wants the flow table too
	rttReq    atomic.Bool // and the RTT table
	snap      atomic.Pointer[DirStats]
	held      atomic.Pointer[DirStats]
	published chan struct{} // a requested snapshot is out
	reqMu     sync.Mutex    // one stats request at a time
	served    DirStats      // the last snapshot a reader got from reqSnap; under reqMu
	drops     tun.DropCounter
	ringBase  uint64
	cpu       threadCPUClock
}

// threadCPUClock is the owner thread's CPU time as the reporter counts
// it.
type threadCPUClock struct {
	tid atomic.Int32 // the owner's OS thread, for its CPU time
	// The thread's CPU time (total, system) when the owner locked it.
	base, sysBase atomic.Int64
	// The thread's CPU time and In at the last publish on the owner's
	// thread (onThread), to count the CPU of the intervals that read no
	// packet (DirStats.IdleCPU).
	pubCPU   int64
	pubIn    uint64
	onThread bool
}

// countIdle adds to idleCPU the thread's CPU time since the last publish
// when it read no packet meanwhile (in, the packets read, unchanged); on
// the owner's thread only, so not at the publish before the owner runs.
func (c *threadCPUClock) countIdle(in uint64, idleCPU *int64) {
	if !c.onThread {
		return
	}
	if cpu := selfCPU(); cpu > 0 {
		if in == c.pubIn {
			*idleCPU += cpu - c.pubCPU
		}
		c.pubCPU, c.pubIn = cpu, in
	}
}

// setNames makes the names a snapshot gives the link's settings.
func (r *reporter) setNames(l shaper.Config) {
	r.rateName = fmt.Sprint(l.Rate)
	r.faultName = faultName(l.Fault)
	r.linkNames = [3]string{}
	if l.Jitter.Amount > 0 {
		r.linkNames[0] = l.Jitter.String()
	}
	if l.Loss != nil {
		r.linkNames[1] = fmt.Sprint(l.Loss)
	}
	if l.Aggregate.On() {
		r.linkNames[2] = l.Aggregate.String()
	}
}

// publish closes the open Worst intervals (the histograms' too) and
// hands out a snapshot of the counters: into reqSnap when a reader asked
// for one (statsReq), and into snap when store is set (the owner starting
// or returning) or when nobody asked (the periodic one, so that snap stays
// recent where nobody polls). Neither allocates: a reader may poll often,
// as the lab's sampler does, and an idle hop publishes every interval,
// without the owner allocating on its real-time thread, where a garbage
// collection in progress can make an allocating goroutine assist it (and
// where garbage made while idle grows the heap until the next collection).
func (o *owner) publish(now int64, store bool) {
	o.st.Worst.Close()
	o.st.SojournC.Close()
	o.st.SojournL.Close()
	o.st.Lateness.Close()
	o.rep.cpu.countIdle(o.st.In, &o.st.IdleCPU)
	if o.rep.rtt != nil {
		o.rep.rtt.drain(now)
	}
	var bps uint64
	if c, ok := o.cfg.Link.Rate.(shaper.Const); ok {
		bps = c.BitsPerSecond
	}
	o.rep.watch.observe(now, bps, o.st.InBytes, o.link.Stats().Busy, o.link.QueuedUntil(now))
	o.rep.seq++
	req := o.rep.statsReq.Swap(false)
	if req {
		o.fill(&o.rep.reqSnap, now)
		if o.rep.flowsReq.Swap(false) && o.rep.flows != nil {
			o.copyFlows(o.rep.reqFlows, now)
		}
		if o.rep.rttReq.Swap(false) && o.rep.rtt != nil {
			o.copyRTT(now)
		}
	}
	if store || !req {
		o.storeSnap(req, now)
	}
	if req {
		select {
		case o.rep.published <- struct{}{}:
		default:
		}
	}
}

// storeSnap writes a snapshot (a copy of reqSnap when req is set) into a
// buffer of stored that is neither in snap nor held by the reader, and
// puts it in snap. The reader announces the buffer it copies in held
// before it copies (newerStored), so with three buffers one is always
// free and the owner never waits for a reader.
func (o *owner) storeSnap(req bool, now int64) {
	cur, held := o.rep.snap.Load(), o.rep.held.Load()
	for i := range o.rep.stored {
		s := &o.rep.stored[i]
		if s == cur || s == held {
			continue
		}
		if req {
			*s = o.rep.reqSnap
		} else {
			o.fill(s, now)
		}
		o.rep.snap.Store(s)
		return
	}
}

// newerStored copies the snapshot in snap into s if it is newer than s.
// One reader at a time (under reqMu): it announces the buffer in held
// and uses it only once snap still names it, so the owner, which reads
// held after it last put that buffer in snap, leaves it alone until held
// is cleared (a hazard pointer).
func (o *owner) newerStored(s *DirStats) {
	var p *DirStats
	for {
		p = o.rep.snap.Load()
		o.rep.held.Store(p)
		if o.rep.snap.Load() == p {
			break
		}
	}
	if p.Seq > s.Seq {
		*s = *p
	}
	o.rep.held.Store(nil)
}

// fill writes a snapshot of the counters into s.
func (o *owner) fill(s *DirStats, now int64) {
	*s = o.st
	s.Seq = o.rep.seq
	s.Taken = time.Now()
	s.Elapsed = now - o.start
	s.Kind = o.cfg.Queue.Kind
	s.Spec = o.cfg.Queue
	s.Jitter, s.Loss, s.Aggregate = o.rep.linkNames[0], o.rep.linkNames[1], o.rep.linkNames[2]
	s.Rate = o.rep.rateName
	s.Fault = o.rep.faultName
	s.Bps = 0
	if c, ok := o.cfg.Link.Rate.(shaper.Const); ok {
		s.Bps = c.BitsPerSecond
	}
	s.Delay = o.cfg.Link.Delay
	s.Queue = o.link.Queue().Stats(now)
	s.Link = o.link.Stats()
	s.Link.Queued = o.link.QueuedUntil(now)
	s.NotBottleneck, s.PathBps = o.rep.watch.elsewhere, o.rep.watch.pathBps
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
	s, _ := o.snapshotFlows(running, false, 0, nil)
	return s
}

// copyRTT copies the RTT table into reqRTT: on the owner.
func (o *owner) copyRTT(now int64) {
	o.rep.rtt.drain(now)
	o.rep.rtt.t.CopyTo(o.rep.reqRTT, now)
	o.rep.reqRTTStats = o.rep.rtt.stats()
}

// snapshotFlows is snapshot, with the flow table's top flows when
// withFlows is set (top < 0: all of them). The owner copies its table
// into reqFlows in the same handover, and the reader turns that copy into
// figures. Without a fresh snapshot the table is read only once the owner
// has returned; a reader that timed out gets an empty one. With rj, the
// owner that holds the RTT table copies it too, for rj to read (fill),
// and the flows get their RTT from rj.
func (o *owner) snapshotFlows(running, withFlows bool, top int, rj *rttJoin) (DirStats, FlowTable) {
	o.rep.reqMu.Lock()
	defer o.rep.reqMu.Unlock()
	var ft FlowTable
	flowsOK := false
	if withFlows && o.rep.flows != nil && o.rep.reqFlows == nil {
		o.rep.reqFlows = new(flowCopy)
	}
	wantRTT, rttOK := rj != nil && o.rep.rtt != nil, false
	if wantRTT && o.rep.reqRTT == nil {
		o.rep.reqRTT = rtt.NewSnapshot(o.rep.rtt.t)
	}
	if running {
		select { // a token nobody took (none is left by the handover)
		case <-o.rep.published:
		default:
		}
		if withFlows && o.rep.flows != nil {
			o.rep.flowsReq.Store(true)
		}
		if wantRTT {
			o.rep.rttReq.Store(true)
		}
		o.rep.statsReq.Store(true)
		o.waker.signal()
		fresh := true
		select {
		case <-o.rep.published:
		case <-o.exited: // on its way out the owner served the request if it saw it
			fresh = false
		case <-time.After(time.Second):
			fresh = false
		}
		if !fresh && !o.rep.statsReq.CompareAndSwap(true, false) {
			<-o.rep.published // the owner took the request: it is filling reqSnap
			fresh = true
		}
		if fresh {
			o.rep.served = o.rep.reqSnap
			// The owner copied its table only if it saw the flag (a
			// request it took is always served in full).
			flowsOK = withFlows && o.rep.flows != nil && !o.rep.flowsReq.Swap(false)
			rttOK = wantRTT && !o.rep.rttReq.Swap(false)
		}
		o.rep.flowsReq.Store(false)
		o.rep.rttReq.Store(false)
	}
	if wantRTT && !rttOK {
		select {
		case <-o.exited: // the owner is gone: its table is the reader's now
			o.copyRTT(clock())
			rttOK = true
		default:
		}
	}
	if rttOK {
		rj.fill(o.rep.reqRTT, o.rep.reqRTTStats)
	}
	if withFlows && o.rep.flows != nil && !flowsOK {
		select {
		case <-o.exited: // the owner is gone: its table is the reader's now
			o.copyFlows(o.rep.reqFlows, clock())
			flowsOK = true
		default:
		}
	}
	if flowsOK {
		ft = o.rep.reqFlows.table(o.dir, top, rj)
	} else {
		ft = FlowTable{Dir: o.dir.String(), Capacity: FlowTableSize}
	}
	s := o.rep.served
	o.newerStored(&s)
	if cpu, sys := threadCPU(o.rep.cpu.tid.Load()); cpu > 0 {
		s.CPU, s.CPUSys = cpu-o.rep.cpu.base.Load(), max(sys-o.rep.cpu.sysBase.Load(), 0)
	}
	if o.rep.drops != nil {
		if n, err := o.rep.drops.RingDrops(); err == nil && n >= o.rep.ringBase {
			s.RingDrops = n - o.rep.ringBase
		}
	}
	return s, ft
}
