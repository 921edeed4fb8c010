package hop

// Optional observers of the data path: the capture tap, the flow table,
// and any other that must see packets go by (doc.go's contract).

import (
	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/shaper"
	"github.com/pi2hop/pi2hop/tun"
)

// observer sees one direction's packets at the points of their life on
// the path, on the owner goroutine (doc.go, "Observers", has the
// contract). slot names the packet's buffer from its arrive to its
// release or depart, so an observer may keep state per slot; pkt is
// valid during the call only.
type observer interface {
	// arrive: read into slot, before the queue; m is its metadata and
	// hash its keyed flow hash when an observer asked for one
	// (observers.keyed), else 0.
	arrive(slot int32, pkt []byte, m *aqm.Meta, hash uint32, now int64)
	// enqueue: the queue took the packet (refused nil) or refused it
	// (refused: its verdict, at now). A packet read with no free buffer
	// is refused with slot -1, with no arrive before.
	enqueue(slot int32, pkt []byte, refused *shaper.Event, now int64)
	// release: the link let the packet go at ev.At, to be written, or
	// dropped (ev.Verdict.Action is aqm.Drop: at dequeue, on the link,
	// or by a change that shrank the queue); marked says the AQM set CE.
	release(slot int32, pkt []byte, ev *shaper.Event, marked bool)
	// depart: a released packet was written (ok) or refused by the
	// output device, at now.
	depart(slot int32, pkt []byte, ev *shaper.Event, ok bool, now int64)
}

// quietObserver does nothing at any point: embedded in an observer, it
// stands for the points the observer has no use for.
type quietObserver struct{}

func (quietObserver) arrive(int32, []byte, *aqm.Meta, uint32, int64)   {}
func (quietObserver) enqueue(int32, []byte, *shaper.Event, int64)      {}
func (quietObserver) release(int32, []byte, *shaper.Event, bool)       {}
func (quietObserver) depart(int32, []byte, *shaper.Event, bool, int64) {}

// observers are a direction's observers, called in the order added. With
// none, each point costs a loop over an empty slice: no nil check on the
// path, no call.
type observers struct {
	list []observer
	// keyed says an observer wants each packet's keyed flow hash, under
	// key (the flow table's), which the path reads in the same pass over
	// the header as its metadata (aqm.MetaOfKeyed).
	keyed bool
	key   uint32
}

// add appends an observer; before the owner runs.
func (s *observers) add(ob observer) { s.list = append(s.list, ob) }

func (s *observers) arrive(slot int32, pkt []byte, m *aqm.Meta, hash uint32, now int64) {
	for _, ob := range s.list {
		ob.arrive(slot, pkt, m, hash, now)
	}
}

func (s *observers) enqueue(slot int32, pkt []byte, refused *shaper.Event, now int64) {
	for _, ob := range s.list {
		ob.enqueue(slot, pkt, refused, now)
	}
}

func (s *observers) release(slot int32, pkt []byte, ev *shaper.Event, marked bool) {
	for _, ob := range s.list {
		ob.release(slot, pkt, ev, marked)
	}
}

func (s *observers) depart(slot int32, pkt []byte, ev *shaper.Event, ok bool, now int64) {
	for _, ob := range s.list {
		ob.depart(slot, pkt, ev, ok, now)
	}
}

// tapObserver hands packets to a Tap at its in, out and drop points.
type tapObserver struct {
	tap  Tap
	dir  int
	part []bool // the path's partial-checksum flags per slot (see whole)
}

func (t *tapObserver) arrive(slot int32, pkt []byte, _ *aqm.Meta, _ uint32, now int64) {
	t.tap.Packet(t.dir, int(TapIn), now, t.whole(slot, pkt), nil)
}

func (t *tapObserver) enqueue(slot int32, pkt []byte, refused *shaper.Event, now int64) {
	if refused != nil {
		t.tap.Packet(t.dir, int(TapDrop), now, t.whole(slot, pkt), refused)
	}
}

func (t *tapObserver) release(slot int32, pkt []byte, ev *shaper.Event, _ bool) {
	if ev.Verdict.Action == aqm.Drop {
		t.tap.Packet(t.dir, int(TapDrop), ev.At, t.whole(slot, pkt), ev)
	}
}

func (t *tapObserver) depart(slot int32, pkt []byte, ev *shaper.Event, ok bool, _ int64) {
	point := TapOut
	if !ok {
		point = TapDrop
	}
	t.tap.Packet(t.dir, int(point), ev.At, t.whole(slot, pkt), ev)
}

// whole returns the packet in slot with its checksum complete: a capture
// shows packets as they are on a wire. A partial one (see
// tun.PartialReader) is completed in place, once; it is written on as a
// complete packet, which the kernel takes as well.
func (t *tapObserver) whole(slot int32, pkt []byte) []byte {
	if slot >= 0 && t.part != nil && t.part[slot] {
		tun.CompleteChecksum(pkt)
		t.part[slot] = false
	}
	return pkt
}

// flowObserver counts each packet against its flow in the flow table,
// from its arrival to its release.
type flowObserver struct {
	quietObserver // depart
	t             *flowCounters
	flowOf        []int32 // the flow of each slot's packet, from its arrive to its fate
}

// newFlowObserver makes the table of a direction with slots buffers,
// scoring flows against scorer.
func newFlowObserver(key uint32, scorer aqm.QProtScorer, slots int) *flowObserver {
	f := &flowObserver{t: &flowCounters{key: key}, flowOf: make([]int32, slots)}
	f.t.reset(scorer)
	for i := range f.flowOf {
		f.flowOf[i] = otherFlow // and each page mapped before the owner runs
	}
	return f
}

func (f *flowObserver) arrive(slot int32, pkt []byte, m *aqm.Meta, hash uint32, now int64) {
	fi := f.t.lookup(pkt, hash, now)
	f.t.arrive(fi, m.ECN, len(pkt), now)
	f.flowOf[slot] = fi
}

func (f *flowObserver) enqueue(slot int32, _ []byte, refused *shaper.Event, _ int64) {
	switch {
	case slot < 0: // no buffer: never counted in
	case refused != nil:
		f.t.dropped(f.flowOf[slot], refused.Verdict.Reason)
	default:
		f.t.held(f.flowOf[slot])
	}
}

func (f *flowObserver) release(slot int32, pkt []byte, ev *shaper.Event, marked bool) {
	if ev.Verdict.Action == aqm.Drop {
		f.t.droppedHeld(f.flowOf[slot], ev.Verdict.Reason)
		return
	}
	f.t.released(f.flowOf[slot], &ev.Meta, marked, aqm.Header(pkt).ECN(), ev.Verdict.Class, ev.Deq-ev.Meta.Arrival, ev.At)
}
