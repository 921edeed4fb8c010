package replay

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/shaper"
)

// Config is one replay: the link, the queue discipline it drains (any
// kind aqm.NewQueue builds) and the seed of every random draw.
type Config struct {
	Link  shaper.Config
	Queue aqm.Spec
	Seed  uint64
	// KeepFrames keeps each captured packet's bytes until its fate is
	// known, for handlers that write packets (CaptureWriter, PcapWriter).
	// Without it Packet.Frame is nil in every callback.
	KeepFrames bool
}

// Random streams derived from Config.Seed: the AQM's rolls and the link's
// loss draw from separate PCG streams, so enabling loss leaves the AQM's
// decisions where they were.
const (
	streamAQM  = 1
	streamLoss = 2
)

// DropPoint says where a packet was dropped.
type DropPoint uint8

const (
	// AtEnqueue: refused by the queue as it arrived (a limit, or an AQM
	// that drops at enqueue); never dequeued, so Event.Deq and Dep are 0.
	AtEnqueue DropPoint = iota
	// AtDequeue: dropped by the AQM as the link pulled it, at Event.Deq.
	AtDequeue
	// OnLink: lost by the loss model as it left the link, at Event.Dep.
	OnLink
)

func (d DropPoint) String() string {
	switch d {
	case AtEnqueue:
		return "enqueue"
	case AtDequeue:
		return "dequeue"
	case OnLink:
		return "link"
	}
	return fmt.Sprintf("DropPoint(%d)", d)
}

// Handler receives a replay's events, one call per event, in time order:
// at equal times the queue update comes first, then what the dequeue at
// that time led to, then the arrival. p is valid only during the call.
// An error stops the replay and is returned by Run.
type Handler interface {
	// Arrival: p arrives at p.Time and is offered to the queue right after.
	Arrival(p *Packet) error
	// Depart: p, delivered (ev.Verdict Pass or Mark), leaves the delay
	// line at ev.At; ev.Deq and ev.Dep are when it left the queue and the link.
	Depart(p *Packet, ev *shaper.Event) error
	// Drop: p was dropped at ev.At, where says at which point.
	Drop(p *Packet, ev *shaper.Event, where DropPoint) error
	// Update: the queue ran its periodic update (DualPI2's PI update) at
	// at; st is its state just after. Every update from the first arrival
	// until the last packet has left is reported, idle ones included.
	Update(at int64, st *aqm.Stats) error
}

// QueueCounts tally one queue's packets.
type QueueCounts struct {
	Arrivals  uint64 // offered to the queue, refused ones included
	Delivered uint64 // left the delay line (Sent + marked)
	Sent      uint64 // delivered unmarked
	Bytes     uint64 // of the delivered packets
	Marks     [aqm.NumReasons]uint64
	Drops     [aqm.NumReasons]uint64
	// Dequeued counts the packets that left the queue (delivered, dropped
	// at dequeue, lost); their sojourns (dequeue − arrival) sum to
	// SojournSum, the largest is SojournMax.
	Dequeued               uint64
	SojournSum, SojournMax int64
}

// Result is what a replay counted.
type Result struct {
	Packets       int
	FirstArrival  int64 // of the first packet
	LastDeparture int64 // the latest time a packet left the link (lost ones included)
	Busy          int64 // ns the link spent transmitting
	Updates       int   // queue updates reported
	// Queues are by class: 0 Classic, 1 L4S (LLLL counts as L4S).
	Queues [2]QueueCounts
	// Stats is the queue's own statistics at LastDeparture.
	Stats aqm.Stats
	// Faults counts the packets the link's ECN path fault rewrote or
	// dropped, by kind (shaper.LinkStats.Faults).
	Faults [shaper.NumFaultKinds]uint64
}

// QueueIndex is the index into Result.Queues of a class.
func QueueIndex(c aqm.Class) int {
	if c == aqm.Classic {
		return 0
	}
	return 1
}

// update is a queue update kept until it can be reported in time order
// with the packet events of the same Poll.
type update struct {
	at int64
	st aqm.Stats
}

// Engine runs packets through one shaper.Link in virtual time. Virtual
// time starts at 0; the link sends one packet at a time; a packet leaves
// the queue when the link becomes free and leaves the link
// ceil(8·bytes·1e9/rate) ns later, then waits the delay in a FIFO delay
// line. At equal times the queue's update comes first, then the dequeue,
// then the arrival (shaper.Link's order, with arrivals offered after
// polling up to their time).
type Engine struct {
	cfg  Config
	q    aqm.Queue
	link *shaper.Link
	hs   []Handler

	events  []shaper.Event
	updates []update

	// In-flight packets by Meta.Slot, with a free list; frames[i] is
	// slot i's copy of its frame (KeepFrames), reused.
	slots  []Packet
	frames [][]byte
	free   []int32

	res     Result
	err     error  // first handler error
	flowKey uint32 // keys the hash of CSV flow ids (FlowKey of the seed)
}

// New builds the queue and the link of cfg.
func New(cfg Config) (*Engine, error) {
	q, err := aqm.NewQueue(cfg.Queue, rand.New(rand.NewPCG(cfg.Seed, streamAQM)))
	if err != nil {
		return nil, err
	}
	link, err := shaper.NewLink(cfg.Link, q, rand.New(rand.NewPCG(cfg.Seed, streamLoss)))
	if err != nil {
		return nil, err
	}
	e := &Engine{cfg: cfg, q: q, link: link, events: make([]shaper.Event, 0, 256), flowKey: FlowKey(cfg.Seed)}
	link.OnUpdate(e.onUpdate)
	return e, nil
}

// Queue returns the queue discipline the engine drives.
func (e *Engine) Queue() aqm.Queue { return e.q }

// Run replays src to its end and until the last packet has left the
// link, calling each handler for each event, in the order given. An
// Engine runs once.
func (e *Engine) Run(ctx context.Context, src Source, hs ...Handler) (Result, error) {
	e.hs = hs
	var p Packet
	for e.err == nil {
		ok, err := src.Next(&p)
		if err != nil {
			return e.res, err
		}
		if !ok {
			break
		}
		if e.res.Packets&1023 == 0 {
			if err := ctx.Err(); err != nil {
				return e.res, err
			}
		}
		if e.res.Packets == math.MaxInt32 {
			return e.res, fmt.Errorf("trace has more than %d packets", math.MaxInt32)
		}
		p.Index = e.res.Packets
		if p.Index == 0 {
			// Nothing happened before the first arrival: run the queue's
			// updates up to just before it without reporting them, so a
			// trace in absolute time (Unix ns) costs nothing.
			e.res.FirstArrival = p.Time
			e.q.Advance(p.Time - 1)
		}
		e.res.Packets++
		e.advance(p.Time)
		e.arrive(&p)
	}
	// Drain: run until the last packet has left the delay line. Queue
	// updates keep coming forever, so stop as soon as nothing is pending.
	for e.err == nil && e.link.Pending() > 0 {
		if err := ctx.Err(); err != nil {
			return e.res, err
		}
		next := e.link.Next()
		if next == math.MaxInt64 {
			return e.res, fmt.Errorf("replay: link reports %d packets pending but nothing to do", e.link.Pending())
		}
		e.pollTo(next)
	}
	if e.err != nil {
		return e.res, e.err
	}
	e.res.Busy = e.link.Stats().Busy
	e.res.Faults = e.link.Stats().Faults
	e.res.Stats = e.q.Stats(e.res.LastDeparture)
	return e.res, nil
}

// advance does everything due at or before now, one instant at a time,
// so the updates kept for time order stay few even across long idle gaps.
func (e *Engine) advance(now int64) {
	for e.err == nil {
		next := e.link.Next()
		if next > now {
			return
		}
		e.pollTo(next)
	}
}

// arrive reports p's arrival and offers it to the link.
func (e *Engine) arrive(p *Packet) {
	for _, h := range e.hs {
		e.check(h.Arrival(p))
	}
	slot := e.hold(p)
	flow := p.Flow
	if p.Frame == nil {
		flow = CSVFlowHash(p.Flow, e.flowKey)
	}
	m := aqm.Meta{Len: p.Len, Slot: slot, Flow: flow, ECN: p.ECN, DSCP: p.DSCP}
	// The frame, when the input has one, is what a fault's protocol and
	// port selectors read.
	v := e.link.EnqueuePacket(m, p.Frame, p.Time)
	qc := &e.res.Queues[QueueIndex(v.Class)]
	qc.Arrivals++
	if v.Action != aqm.Drop {
		return
	}
	qc.Drops[v.Reason]++
	ev := e.link.RefusedEvent()
	ev.Prob = e.q.Stats(p.Time).Prob
	for _, h := range e.hs {
		e.check(h.Drop(&e.slots[slot], &ev, AtEnqueue))
	}
	e.release(slot)
}

// pollTo polls the link at now and reports what happened in time order.
func (e *Engine) pollTo(now int64) {
	e.events = e.link.Poll(now, e.events[:0])
	u := 0
	for k := range e.events {
		ev := &e.events[k]
		for ; u < len(e.updates) && e.updates[u].at <= ev.At; u++ {
			e.report(&e.updates[u])
		}
		e.handle(ev)
	}
	for ; u < len(e.updates); u++ {
		e.report(&e.updates[u])
	}
	e.updates = e.updates[:0]
}

// onUpdate records a queue update; Link calls it inside Poll, at the
// update's time, before the events of that Poll are handed out.
func (e *Engine) onUpdate(at int64) {
	e.updates = append(e.updates, update{at: at, st: e.q.Stats(at)})
	e.res.Updates++
}

func (e *Engine) report(u *update) {
	for _, h := range e.hs {
		e.check(h.Update(u.at, &u.st))
	}
}

// handle counts and reports one event of the link.
func (e *Engine) handle(ev *shaper.Event) {
	m, v := ev.Meta, ev.Verdict
	p := &e.slots[m.Slot]
	qc := &e.res.Queues[QueueIndex(m.Class)]
	sojourn := ev.Deq - m.Arrival
	qc.Dequeued++
	qc.SojournSum += sojourn
	qc.SojournMax = max(qc.SojournMax, sojourn)
	// A loss, or a drop-ect fault after the queue: the packet left the link.
	lost := v.Action == aqm.Drop && (v.Reason == aqm.ReasonLoss || v.Reason == aqm.ReasonFault)
	if v.Action != aqm.Drop || lost {
		e.res.LastDeparture = max(e.res.LastDeparture, ev.Dep)
	}
	switch v.Action {
	case aqm.Drop:
		qc.Drops[v.Reason]++
		where := AtDequeue
		if lost {
			where = OnLink
		}
		for _, h := range e.hs {
			e.check(h.Drop(p, ev, where))
		}
	case aqm.Mark:
		qc.Marks[v.Reason]++
		qc.Delivered++
		qc.Bytes += uint64(m.Len)
		e.depart(p, ev)
	default:
		qc.Sent++
		qc.Delivered++
		qc.Bytes += uint64(m.Len)
		e.depart(p, ev)
	}
	e.release(m.Slot)
}

func (e *Engine) depart(p *Packet, ev *shaper.Event) {
	for _, h := range e.hs {
		e.check(h.Depart(p, ev))
	}
}

func (e *Engine) check(err error) {
	if err != nil && e.err == nil {
		e.err = err
	}
}

// hold keeps p (and a copy of its frame, with KeepFrames) until its fate
// is known, and returns its slot.
func (e *Engine) hold(p *Packet) int32 {
	var i int32
	if n := len(e.free); n > 0 {
		i, e.free = e.free[n-1], e.free[:n-1]
	} else {
		i = int32(len(e.slots))
		e.slots = append(e.slots, Packet{})
		e.frames = append(e.frames, nil)
	}
	s := &e.slots[i]
	*s = *p
	s.Frame = nil
	if e.cfg.KeepFrames && p.Frame != nil {
		e.frames[i] = append(e.frames[i][:0], p.Frame...)
		s.Frame = e.frames[i]
	}
	return i
}

func (e *Engine) release(i int32) {
	e.slots[i].Frame = nil
	e.free = append(e.free, i)
}
