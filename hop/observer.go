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
// valid during the call only. It is called only at the points it names.
type observer interface {
	// points are the calls below the observer wants.
	points() points
	// arrive: read into slot, and offered to the queue, which took it
	// (refused nil) or refused it (refused: its verdict, at now); m is
	// its metadata and hash its keyed flow hash when an observer asked
	// for one (observers.keyed), else 0. A packet read with no free
	// buffer arrives refused, with slot -1.
	arrive(slot int32, pkt []byte, m *aqm.Meta, hash uint32, refused *shaper.Event, now int64)
	// release: the link let a packet the queue took go at ev.At, to be
	// written, or dropped (ev.Verdict.Action is aqm.Drop: at dequeue, on
	// the link, or by a change that shrank the queue); marked says the
	// AQM set CE.
	release(slot int32, pkt []byte, ev *shaper.Event, marked bool)
	// depart: a released packet was written (ok) or refused by the
	// output device, at now.
	depart(slot int32, pkt []byte, ev *shaper.Event, ok bool, now int64)
}

// points are a set of an observer's calls.
type points uint8

const (
	atArrive points = 1 << iota
	atRelease
	atDepart
)

// quietObserver does nothing at any point: embedded in an observer, it
// stands for the calls the observer has no use for (and points leaves
// out).
type quietObserver struct{}

func (quietObserver) points() points                                                { return 0 }
func (quietObserver) arrive(int32, []byte, *aqm.Meta, uint32, *shaper.Event, int64) {}
func (quietObserver) release(int32, []byte, *shaper.Event, bool)                    {}
func (quietObserver) depart(int32, []byte, *shaper.Event, bool, int64)              {}

// observers are a direction's observers, called in the order added, each
// at the points it wants: with none at a point, the point costs a loop
// over an empty slice, and no call.
type observers struct {
	arrivals, releases, departs []observer
	// keyed says an observer wants each packet's keyed flow hash, under
	// key (the flow table's), which the path reads in the same pass over
	// the header as its metadata (aqm.MetaOfKeyed).
	keyed bool
	key   uint32
}

// add adds an observer; before the owner runs.
func (s *observers) add(ob observer) {
	p := ob.points()
	if p&atArrive != 0 {
		s.arrivals = append(s.arrivals, ob)
	}
	if p&atRelease != 0 {
		s.releases = append(s.releases, ob)
	}
	if p&atDepart != 0 {
		s.departs = append(s.departs, ob)
	}
	if f, ok := ob.(*flowObserver); ok {
		s.keyed, s.key = true, f.t.key
	}
}

func (s *observers) arrive(slot int32, pkt []byte, m *aqm.Meta, hash uint32, refused *shaper.Event, now int64) {
	for _, ob := range s.arrivals {
		ob.arrive(slot, pkt, m, hash, refused, now)
	}
}

func (s *observers) release(slot int32, pkt []byte, ev *shaper.Event, marked bool) {
	for _, ob := range s.releases {
		ob.release(slot, pkt, ev, marked)
	}
}

func (s *observers) depart(slot int32, pkt []byte, ev *shaper.Event, ok bool, now int64) {
	for _, ob := range s.departs {
		ob.depart(slot, pkt, ev, ok, now)
	}
}

// tapObserver hands packets to a Tap at its in, out and drop points.
type tapObserver struct {
	tap  Tap
	dir  int
	part []bool // the path's partial-checksum flags per slot (see whole)
}

func (t *tapObserver) points() points { return atArrive | atRelease | atDepart }

// arrive shows a packet read (a packet with no buffer was not: slot -1),
// then its drop if the queue refused it.
func (t *tapObserver) arrive(slot int32, pkt []byte, _ *aqm.Meta, _ uint32, refused *shaper.Event, now int64) {
	if slot >= 0 {
		t.tap.Packet(t.dir, int(TapIn), now, t.whole(slot, pkt), nil)
	}
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

func (f *flowObserver) points() points { return atArrive | atRelease }

// arrive counts a packet read against its flow, and its fate at the
// queue; one with no buffer is counted in no flow.
func (f *flowObserver) arrive(slot int32, pkt []byte, m *aqm.Meta, hash uint32, refused *shaper.Event, now int64) {
	if slot < 0 {
		return
	}
	fi := f.t.lookup(pkt, hash, now)
	f.t.arrive(fi, m.ECN, len(pkt), now)
	if refused != nil {
		f.t.dropped(fi, refused.Verdict.Reason)
		return
	}
	f.flowOf[slot] = fi
	f.t.held(fi)
}

func (f *flowObserver) release(slot int32, pkt []byte, ev *shaper.Event, marked bool) {
	if ev.Verdict.Action == aqm.Drop {
		f.t.droppedHeld(f.flowOf[slot], ev.Verdict.Reason)
		return
	}
	f.t.released(f.flowOf[slot], &ev.Meta, marked, aqm.Header(pkt).ECN(), ev.Verdict.Class, ev.Deq-ev.Meta.Arrival, ev.At)
}
