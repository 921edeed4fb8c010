package shaper

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/pi2hop/pi2hop/aqm"
)

// Config describes one direction's link.
type Config struct {
	Rate  Rate  // serialisation rate; required
	Delay int64 // one-way delay after the link, ns (>= 0)
	Loss  Loss  // applied as each packet leaves the link; nil = none
	// Jitter varies each packet's delay without reordering; zero = none.
	Jitter Jitter
	// Aggregate sends in bursts at slot times (Wi-Fi-like); zero = off.
	Aggregate Aggregate
	// Fault rewrites or drops ECN-capable packets, as a middlebox on the
	// path would; zero = none (see Fault).
	Fault Fault
	// Origin is the injected time at which a rate schedule's time 0 falls
	// (a trace's first opportunity is Origin + its first timestamp). Replay
	// starts at 0; a live hop passes its start time. Const ignores it.
	Origin int64
}

// Event is what happened to one packet the queue accepted.
type Event struct {
	Meta    aqm.Meta    // as queued (Arrival = enqueue time, final Class)
	Verdict aqm.Verdict // Pass/Mark = delivered; Drop = dropped by the AQM at dequeue, or lost (ReasonLoss)
	Deq     int64       // left the AQM = start of transmission (0 if never dequeued)
	Dep     int64       // left the link = end of transmission (0 if dropped at dequeue)
	At      int64       // when this event happens: release from the delay line, or the drop or loss time
	Prob    uint32      // the queue's p' at dequeue (0 for queues without one, e.g. FIFO)

	// Fault is the ECN path fault that rewrote or dropped the packet
	// (FaultNone: none did). FaultFrom is the codepoint it had as the
	// fault met it, FaultTo the one it left with (for a drop, FaultFrom).
	// FaultAfter: the fault acted after the queue, so Meta.ECN is still
	// the codepoint the queue saw; before it, Meta.ECN and Meta.DSCP are
	// already the faulted ones and FaultFrom is what the packet came with.
	Fault              FaultKind
	FaultAfter         bool
	FaultFrom, FaultTo aqm.ECN
}

// Sojourn is the time the packet spent in the AQM: dequeue − arrival.
func (e *Event) Sojourn() int64 { return e.Deq - e.Meta.Arrival }

// ECNOut is the codepoint the packet leaves with: CE when the AQM marked
// it, else the one it came with. A Not-ECT packet is never marked (RFC
// 3168 §6.1.1: it is dropped instead), so it stays Not-ECT.
func (e *Event) ECNOut() aqm.ECN {
	if e.FaultAfter && e.Fault != FaultNone {
		return e.FaultTo
	}
	if e.Verdict.Action == aqm.Mark && e.Meta.ECN != aqm.NotECT {
		return aqm.CE
	}
	return e.Meta.ECN
}

// ECNIn returns the codepoint the packet came to the link with, before any
// fault.
func (e *Event) ECNIn() aqm.ECN {
	if e.Fault != FaultNone && !e.FaultAfter {
		return e.FaultFrom
	}
	return e.Meta.ECN
}

// DSOut returns the DS field (DSCP and ECN) the packet leaves with, given
// the one it arrived with: ECNOut's codepoint, and no DSCP after tos-zero.
func (e *Event) DSOut(ds uint8) uint8 {
	if e.Fault == FaultTOSZero {
		return uint8(e.ECNOut())
	}
	return ds&^3 | uint8(e.ECNOut())
}

// LinkStats are a link's counters. Every packet the queue accepted is, at
// any moment, in exactly one place: Enqueued = Delivered + Lost + Dropped +
// FaultDrops + Link.Pending().
type LinkStats struct {
	Enqueued       uint64 // accepted by the queue
	Refused        uint64 // refused by the queue at enqueue (returned by Enqueue)
	Dropped        uint64 // dropped by the queue at dequeue, counted as Poll hands out the event
	Sent           uint64 // transmissions completed, lost packets included
	SentBytes      uint64
	Lost           uint64 // lost by the loss model as they left the link
	LostBytes      uint64
	Delivered      uint64 // released from the delay line
	DeliveredBytes uint64
	// Faults counts the packets an ECN path fault rewrote or dropped, by
	// kind; FaultDrops those drop-ect dropped as they left the link (one
	// before the queue is refused at Enqueue instead).
	Faults     [NumFaultKinds]uint64
	FaultDrops uint64
	// Busy is the time the link spent transmitting, in ns, added as each
	// transmission ends: utilisation over a window is ΔBusy / Δtime.
	Busy int64
	// Queued is the time a packet waited in the queue, in ns: from an
	// arrival that finds the link busy (or waiting for an aggregation
	// slot) until a dequeue leaves the queue empty. Stats counts up to
	// the last of those events; QueuedUntil also the stretch still open.
	Queued      int64
	InDelayLine int // packets in the delay line now
}

// probReporter is implemented by queues with a marking probability
// (aqm.DualPI2); its value is recorded in each Event.
type probReporter interface{ Prob() uint32 }

// Link is one direction's bottleneck: an aqm.Queue drained by a link that
// sends one packet at a time, then a FIFO delay line.
//
//	Enqueue ─► queue ─(link free: Dequeue, marks and drops)─► wire for
//	Rate.Finish(start, len) ─► loss? ─► delay line (FIFO) ─► Poll events
//
// A packet leaves the queue when the link becomes free, which is the start
// of its transmission, and leaves the link at Rate.Finish(start, len).
// Departures follow an absolute schedule: when Poll runs late, each dequeue
// still happens at the time the link became free, never at Poll's now, so
// late wake-ups never turn into rate error. At equal times the queue's
// periodic update (Advance at NextUpdate) runs first, then the dequeue;
// the caller's Enqueue at that time comes after Poll.
//
// A Link is not safe for concurrent use: one owner per direction calls
// Enqueue, Poll and the setters, with non-decreasing now.
type Link struct {
	q      aqm.Queue
	prober probReporter // q's probability, if it has one
	rng    *rand.Rand

	rate   Rate
	origin int64 // injected time of the rate's time 0
	delay  int64
	loss   Loss
	jitter Jitter

	// The ECN path fault: when it took effect (faultBegun, faultT0), how
	// many matching packets it has seen since, and the event of the last
	// packet Enqueue refused (RefusedEvent).
	fault      Fault
	faultBegun bool
	faultT0    int64
	faultSeen  uint64
	refused    Event

	// Aggregation: bursts start at slots (aggOrigin + k·Interval); while
	// waiting for one, aggWait is set and aggAt is its time; during a
	// burst aggBudget is the bytes it may still send.
	agg       Aggregate
	aggOrigin int64
	aggWait   bool
	aggAt     int64
	aggBudget int
	aggLast   int64 // the last slot used

	busy bool  // a packet is on the wire
	wire Event // that packet; wire.Dep is when it leaves the link

	// waiting is set while the queue holds a packet, since waitFrom
	// (LinkStats.Queued).
	waiting  bool
	waitFrom int64

	line        delayLine
	lastRelease int64 // release time of the latest packet put in the line

	// stash holds events from Enqueue (a dequeue-time drop when an idle
	// link pulls the packet at once) until the next Poll hands them out.
	stash []Event

	onUpdate func(at int64)
	stats    LinkStats
}

// NewLink builds a link draining q, which should be empty. rng is where
// loss models draw from (seed it for repeatable runs); it is required even
// without loss so SetLoss can add one later. The delay line is a ring
// sized here for the configured rate and delay; it grows (allocates) only
// if more packets are ever in flight than that.
func NewLink(cfg Config, q aqm.Queue, rng *rand.Rand) (*Link, error) {
	switch {
	case q == nil:
		return nil, errors.New("shaper: no queue")
	case cfg.Rate == nil:
		return nil, errors.New("shaper: no rate (want Const, a mahimahi trace or a rate schedule)")
	case cfg.Delay < 0:
		return nil, fmt.Errorf("shaper: delay %dns is negative", cfg.Delay)
	case cfg.Jitter.Validate() != nil:
		return nil, fmt.Errorf("shaper: %w", cfg.Jitter.Validate())
	case cfg.Aggregate.Validate() != nil:
		return nil, fmt.Errorf("shaper: %w", cfg.Aggregate.Validate())
	case rng == nil:
		return nil, errors.New("shaper: no random source (loss models draw from it)")
	}
	l := &Link{
		q:      q,
		rng:    rng,
		rate:   cfg.Rate,
		origin: cfg.Origin,
		delay:  cfg.Delay,
		loss:   cfg.Loss,
		jitter: cfg.Jitter,
		agg:    cfg.Aggregate,
		fault:  cfg.Fault,

		aggOrigin: cfg.Origin,
		aggLast:   math.MinInt64,
		line:      newDelayLine(delayLineSize(cfg)),
		stash:     make([]Event, 0, 4),
	}
	l.prober, _ = q.(probReporter)
	return l, nil
}

// delayLineSize guesses how many packets the delay line holds: twice the
// full-size packets a constant rate sends during the delay, within
// 64..65536; 1024 for other rates. The line grows if the guess is short.
func delayLineSize(cfg Config) int {
	c, ok := cfg.Rate.(Const)
	if !ok {
		return 1024
	}
	pkts := 2*float64(cfg.Delay)*float64(c.BitsPerSecond)/(8e9*1500) + 64
	return int(min(pkts, 1<<16))
}

// Enqueue offers a packet at now. The caller calls Poll(now) first, so that
// everything due at or before now has happened. A refused packet's verdict
// (Drop) is returned here and produces no event; an accepted one (Pass)
// comes out of Poll later. On an idle link the packet's transmission
// starts at now.
func (l *Link) Enqueue(m aqm.Meta, now int64) aqm.Verdict { return l.EnqueuePacket(m, nil, now) }

// EnqueuePacket is Enqueue with the packet's bytes, which a fault's
// protocol and port selectors read (nil: they match nothing). A packet a
// fault drops before the queue (drop-ect) is refused with reason
// aqm.ReasonFault; RefusedEvent describes any refused packet.
func (l *Link) EnqueuePacket(m aqm.Meta, pkt []byte, now int64) aqm.Verdict {
	m.Tag = 0
	if l.fault.Kind != FaultNone {
		if v, drop := l.faultIn(&m, pkt, now); drop {
			l.refused = Event{Meta: m, Verdict: v, At: now, Fault: FaultDropECT, FaultFrom: m.ECN, FaultTo: m.ECN}
			l.refused.Meta.Arrival = now
			return v
		}
	}
	v := l.q.Enqueue(m, now)
	if v.Action == aqm.Drop {
		l.stats.Refused++
		m.Arrival, m.Class = now, v.Class
		l.refused = Event{Meta: m, Verdict: v, At: now}
		l.tagged(&l.refused)
		if l.prober != nil {
			l.refused.Prob = l.prober.Prob()
		}
		return v
	}
	l.stats.Enqueued++
	if !l.busy {
		l.stash = l.startNext(now, l.stash)
	}
	if !l.waiting {
		if n, _ := l.q.Len(); n > 0 {
			l.waiting, l.waitFrom = true, now
		}
	}
	return v
}

// endWait closes the stretch the queue held packets at t if it is empty.
func (l *Link) endWait(t int64) {
	if !l.waiting {
		return
	}
	if n, _ := l.q.Len(); n == 0 {
		l.waiting = false
		l.stats.Queued += max(t-l.waitFrom, 0)
	}
}

// QueuedUntil is LinkStats.Queued with the stretch still open counted up
// to now.
func (l *Link) QueuedUntil(now int64) int64 {
	if l.waiting {
		return l.stats.Queued + max(now-l.waitFrom, 0)
	}
	return l.stats.Queued
}

// RefusedEvent returns the event of the packet the last Enqueue refused:
// its Meta as the queue saw it (a fault before the queue applied), the
// verdict, and what a fault did to it.
func (l *Link) RefusedEvent() Event { return l.refused }

// faultIn decides, as m reaches the link, whether the fault takes it. A
// Before fault rewrites m (or drops it: drop is true, v the verdict); an
// After one tags m to be rewritten as it leaves the link.
func (l *Link) faultIn(m *aqm.Meta, pkt []byte, now int64) (v aqm.Verdict, drop bool) {
	f := &l.fault
	if !l.faultBegun {
		l.faultBegun, l.faultT0 = true, now
	}
	if !f.matches(pkt) {
		return v, false
	}
	l.faultSeen++
	if l.faultSeen <= f.StartPackets || now-l.faultT0 < f.StartAfter {
		return v, false
	}
	if f.Share > 0 && l.rng.Float64() >= f.Share {
		return v, false
	}
	if f.After {
		m.Tag = faultTag(tagAfter, f.Kind, m.ECN)
		return v, false
	}
	out, drop := f.Kind.Apply(m.ECN, m.ECN)
	if drop {
		l.stats.Faults[f.Kind]++
		return aqm.Verdict{Action: aqm.Drop, Reason: aqm.ReasonFault, Class: m.Class}, true
	}
	dscp := m.DSCP
	if f.Kind == FaultTOSZero {
		dscp = 0
	}
	if out == m.ECN && dscp == m.DSCP {
		return v, false
	}
	l.stats.Faults[f.Kind]++
	m.Tag = faultTag(tagBefore, f.Kind, m.ECN)
	m.ECN, m.DSCP = out, dscp
	return v, false
}

// tagged fills in what a fault before the queue did to e's packet.
func (l *Link) tagged(e *Event) {
	if e.Meta.Tag&tagBefore != 0 {
		e.Fault, e.FaultFrom = tagFault(e.Meta.Tag)
		e.FaultTo = e.Meta.ECN
	}
}

// faultOut applies an After fault to the packet on the wire as it leaves
// the link, and reports whether it dropped it.
func (l *Link) faultOut(w *Event) (drop bool) {
	k, entry := tagFault(w.Meta.Tag)
	from := w.ECNOut()
	out, drop := k.Apply(from, entry)
	if !drop && out == from && !(k == FaultTOSZero && w.Meta.DSCP != 0) {
		return false
	}
	l.stats.Faults[k]++
	w.Fault, w.FaultAfter, w.FaultFrom, w.FaultTo = k, true, from, out
	if drop {
		w.FaultTo = from
		w.Verdict.Action, w.Verdict.Reason = aqm.Drop, aqm.ReasonFault
		w.At = w.Dep
		l.stats.FaultDrops++
	}
	return drop
}

// Poll does everything due at or before now, in time order, and appends
// the resulting events to out in At order: releases from the delay line,
// dequeue-time drops and losses. It does not allocate when out has room.
// A queue with periodic updates (DualPI2) always has a next update, so to
// drain a link poll at Next() while Pending() > 0 rather than Poll(Never).
func (l *Link) Poll(now int64, out []Event) []Event {
	if len(l.stash) > 0 {
		out = append(out, l.stash...)
		l.stats.Dropped += uint64(len(l.stash))
		l.stash = l.stash[:0]
	}
	for {
		tUpdate := l.q.NextUpdate()
		tLink := int64(Never)
		if l.busy {
			tLink = l.wire.Dep
		}
		if l.aggWait {
			tLink = l.aggAt // the link is idle until the slot
		}
		tRelease := int64(Never)
		if l.line.n > 0 {
			tRelease = l.line.front().At
		}
		switch {
		case tUpdate <= now && tUpdate != Never && tUpdate <= tLink && tUpdate <= tRelease:
			l.q.Advance(tUpdate)
			if l.onUpdate != nil {
				l.onUpdate(tUpdate)
			}
		case tLink <= now && tLink != Never && tLink <= tRelease && l.aggWait:
			out = l.startBurst(out)
		case tLink <= now && tLink != Never && tLink <= tRelease:
			out = l.finishTransmission(out)
		case tRelease <= now && tRelease != Never:
			e := l.line.pop()
			l.stats.Delivered++
			l.stats.DeliveredBytes += uint64(e.Meta.Len)
			out = append(out, e)
		default:
			return out
		}
	}
}

// finishTransmission moves the packet on the wire to the delay line (or
// loses it) at its departure time, then starts the next one at that time.
func (l *Link) finishTransmission(out []Event) []Event {
	w := &l.wire
	l.busy = false
	l.stats.Sent++
	l.stats.SentBytes += uint64(w.Meta.Len)
	l.stats.Busy += w.Dep - w.Deq
	if l.loss != nil && l.loss.Lose(l.rng) {
		w.Verdict.Action, w.Verdict.Reason = aqm.Drop, aqm.ReasonLoss
		w.At = w.Dep
		l.stats.Lost++
		l.stats.LostBytes += uint64(w.Meta.Len)
		out = append(out, *w)
	} else if w.Meta.Tag&tagAfter != 0 && l.faultOut(w) {
		out = append(out, *w)
	} else {
		// max() keeps the line FIFO when the delay has just been lowered
		// or jitter drew less for this packet than for the one before.
		d := l.delay
		if l.jitter.Amount != 0 {
			d = max(addSat(d, l.jitter.Sample(l.rng)), 0)
		}
		w.At = max(addSat(w.Dep, d), l.lastRelease)
		l.lastRelease = w.At
		l.line.push(w)
	}
	n := len(out)
	out = l.startNext(w.Dep, out)
	l.stats.Dropped += uint64(len(out) - n)
	return out
}

// startBurst begins an aggregation burst at its slot time.
func (l *Link) startBurst(out []Event) []Event {
	t := l.aggAt
	l.aggWait = false
	l.aggLast = t
	l.aggBudget = l.agg.Bytes
	n := len(out)
	out = l.startNext(t, out)
	l.stats.Dropped += uint64(len(out) - n)
	return out
}

// startNext dequeues at t, the time the link became free, until a packet
// goes on the wire or the queue is empty; dequeue-time drops go to out
// (the caller counts them). With aggregation, outside a burst (no budget
// left) the link waits for the next slot instead, if anything is queued.
func (l *Link) startNext(t int64, out []Event) []Event {
	if l.agg.On() && l.aggBudget <= 0 {
		l.aggBudget = 0
		if n, _ := l.q.Len(); n > 0 && !l.aggWait {
			l.aggWait = true
			l.aggAt = l.agg.nextSlot(t, l.aggOrigin, l.aggLast)
		}
		return out
	}
	for {
		m, v, ok := l.q.Dequeue(t)
		if !ok {
			l.aggBudget = 0 // a burst ends when the queue is empty
			l.endWait(t)
			return out
		}
		var prob uint32
		if l.prober != nil {
			prob = l.prober.Prob()
		}
		if v.Action == aqm.Drop {
			out = append(out, Event{Meta: m, Verdict: v, Deq: t, At: t, Prob: prob})
			if m.Tag != 0 {
				l.tagged(&out[len(out)-1])
			}
			continue
		}
		l.wire = Event{Meta: m, Verdict: v, Deq: t, Dep: l.finish(t, int(m.Len)), Prob: prob}
		if m.Tag != 0 {
			l.tagged(&l.wire)
		}
		l.busy = true
		if l.agg.On() {
			l.aggBudget -= int(m.Len)
		}
		l.endWait(t)
		return out
	}
}

// finish is the rate's Finish with the schedule's origin applied.
func (l *Link) finish(start int64, n int) int64 {
	f := l.rate.Finish(start-l.origin, n)
	if f == Never {
		return Never
	}
	return f + l.origin
}

// Next returns the time of the next thing Poll would do (a queue update,
// the end of a transmission, a release, or events Enqueue left for Poll),
// or Never if there is none. A driver sleeps until then.
func (l *Link) Next() int64 {
	if len(l.stash) > 0 {
		return l.stash[0].At
	}
	t := l.q.NextUpdate()
	if l.busy {
		t = min(t, l.wire.Dep)
	}
	if l.aggWait {
		t = min(t, l.aggAt)
	}
	if l.line.n > 0 {
		t = min(t, l.line.front().At)
	}
	return t
}

// NextRelease returns the earliest time, as far as the link can tell now,
// at which a packet it holds leaves the delay line: the line's front, or
// for a packet on the wire the end of its transmission plus the delay
// (jitter may only make that later, and a loss may take it), or Never.
// Queued packets are not counted: they have not started to transmit. A
// driver that writes its releases in batches holds a release back only
// while another is this close.
func (l *Link) NextRelease() int64 {
	if l.line.n > 0 {
		return l.line.front().At
	}
	if l.busy && l.wire.Dep != Never {
		return max(addSat(l.wire.Dep, l.delay), l.lastRelease)
	}
	return Never
}

// Pending returns the packets the link still holds: queued, on the wire,
// in the delay line, and dropped at dequeue during Enqueue with the event
// not yet handed out. Polling at Next() while Pending() > 0 drains a link.
func (l *Link) Pending() int {
	n, _ := l.q.Len()
	if l.busy {
		n++
	}
	return n + l.line.n + len(l.stash)
}

// SetRate changes the rate at now; a schedule starts over with its time 0
// at now. The packet on the wire keeps its finish time, unless the old rate
// would never have finished it (a zero rate): then it restarts at now.
func (l *Link) SetRate(r Rate, now int64) {
	if r == nil {
		return
	}
	l.rate, l.origin = r, now
	if l.busy && l.wire.Dep == Never {
		l.wire.Dep = l.finish(now, int(l.wire.Meta.Len))
	}
}

// SetDelay changes the one-way delay for packets leaving the link from now
// on (negative means 0). Packets already in the delay line keep their
// release times, and a lower delay never lets a packet overtake another.
func (l *Link) SetDelay(d int64) { l.delay = max(d, 0) }

// SetLoss changes the loss model; nil means none.
func (l *Link) SetLoss(x Loss) { l.loss = x }

// SetJitter changes the delay variation for packets leaving the link from
// now on; an invalid one is refused.
func (l *Link) SetJitter(j Jitter) error {
	if err := j.Validate(); err != nil {
		return err
	}
	l.jitter = j
	return nil
}

// SetAggregate changes the burst model at now: a burst in progress
// finishes under the old one; switching it off lets an idle link start at
// once (what that start drops at dequeue comes out of the next Poll).
func (l *Link) SetAggregate(a Aggregate, now int64) error {
	if err := a.Validate(); err != nil {
		return err
	}
	l.agg = a
	if l.aggWait {
		l.aggWait = false
		if !a.On() && !l.busy {
			l.stash = l.startNext(now, l.stash)
		} else if a.On() {
			l.aggWait, l.aggAt = true, a.nextSlot(now, l.aggOrigin, l.aggLast)
		}
	}
	return nil
}

// SetFault changes the ECN path fault at now; its clock and packet count
// (after=) start over from now. Packets already taken keep the decision
// made as they arrived.
func (l *Link) SetFault(f Fault, now int64) {
	l.fault = f
	l.faultBegun, l.faultT0, l.faultSeen = true, now, 0
}

// Fault returns the current ECN path fault.
func (l *Link) Fault() Fault { return l.fault }

// Jitter returns the current delay variation.
func (l *Link) Jitter() Jitter { return l.jitter }

// Aggregate returns the current burst model.
func (l *Link) Aggregate() Aggregate { return l.agg }

// Rate returns the current rate.
func (l *Link) Rate() Rate { return l.rate }

// Delay returns the current one-way delay, ns.
func (l *Link) Delay() int64 { return l.delay }

// Queue returns the queue discipline the link drains.
func (l *Link) Queue() aqm.Queue { return l.q }

// Stats returns a snapshot of the counters.
func (l *Link) Stats() LinkStats {
	s := l.stats
	s.InDelayLine = l.line.n
	return s
}

// OnUpdate sets a function called after each periodic queue update with
// its time (replay prints the PI state there). Not for the hot path.
func (l *Link) OnUpdate(f func(at int64)) { l.onUpdate = f }
