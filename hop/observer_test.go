package hop

import (
	"fmt"
	"testing"

	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/shaper"
)

// lifeObserver checks that each packet meets the points of observer's
// contract in order (arrive, then release and depart if the queue took
// it) and counts them.
type lifeObserver struct {
	t                        *testing.T
	stage                    map[int32]string // a slot's last point
	arrived, held, refused   int
	noBuffer                 int
	released, relDropped     int
	departed, departFailed   int
	lastArrive, lastDepartAt int64
}

func (l *lifeObserver) expect(slot int32, from, to string) {
	if got := l.stage[slot]; got != from {
		l.t.Errorf("slot %d: %s after %q, want after %q", slot, to, got, from)
	}
	l.stage[slot] = to
}

func (l *lifeObserver) points() points { return atArrive | atRelease | atDepart }

func (l *lifeObserver) arrive(slot int32, pkt []byte, m *aqm.Meta, hash uint32, refused *shaper.Event, now int64) {
	if int(m.Len) != len(pkt) || m.Slot != slot {
		l.t.Errorf("arrive: meta of %d bytes in slot %d for a packet of %d in slot %d", m.Len, m.Slot, len(pkt), slot)
	}
	l.lastArrive = now
	switch {
	case slot < 0:
		l.noBuffer++
		return
	case refused != nil:
		l.expect(slot, "", "")
		l.refused++
	default:
		l.expect(slot, "", "held")
		l.held++
	}
	l.arrived++
}

func (l *lifeObserver) release(slot int32, pkt []byte, ev *shaper.Event, marked bool) {
	if ev.Verdict.Action == aqm.Drop {
		l.expect(slot, "held", "")
		l.relDropped++
		return
	}
	l.expect(slot, "held", "released")
	l.released++
}

func (l *lifeObserver) depart(slot int32, pkt []byte, ev *shaper.Event, ok bool, now int64) {
	l.expect(slot, "released", "")
	if ok {
		l.departed++
	} else {
		l.departFailed++
	}
	l.lastDepartAt = now
}

// An observer sees every packet at each point of its life, in order, and
// its counts balance with the owner's: arrivals are In, departures Out,
// refusals and drops the queue's drops. The path allocates nothing for
// it.
func TestObserverSeesEveryPacket(t *testing.T) {
	cfg := testConfig(100_000_000, 0)
	cfg.Up.Queue = aqm.Spec{Kind: aqm.KindFIFO, FIFO: aqm.FIFOConfig{Limit: 10}}
	in, out := &nullDevice{pkt: udp4(1500, aqm.ECT1, 1)}, &nullDevice{}
	h, err := New(cfg, in, out)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	o := h.dirs[Up]
	l := &lifeObserver{t: t, stage: map[int32]string{}}
	o.obs.add(l)
	step := func() {
		in.left = 64 // more than the queue holds
		if _, err := o.readBatch(); err != nil {
			t.Fatal(err)
		}
		o.release(clock() + 10_000_000) // 10 packets take 1.2 ms at 100 Mbit/s
	}
	step()
	// The queue holds 10, and one more is on the wire as soon as it comes.
	if l.arrived != 64 || l.held != 11 || l.refused != 53 || l.released != 11 || l.departed != 11 {
		t.Errorf("one batch: %d arrived, %d held, %d refused, %d released, %d departed; want 64, 11, 53, 11, 11",
			l.arrived, l.held, l.refused, l.released, l.departed)
	}
	for range 5 {
		step()
	}
	s := &o.st
	drops := s.Dropped() - s.NoBuffer - s.WriteErrors
	if uint64(l.arrived) != s.In || uint64(l.departed) != s.Out || uint64(l.refused+l.relDropped) != drops || l.departFailed != 0 || l.noBuffer != 0 {
		t.Errorf("observer: %d arrived, %d departed, %d dropped; owner: In %d, Out %d, queue drops %d",
			l.arrived, l.departed, l.refused+l.relDropped, s.In, s.Out, drops)
	}
	if l.lastDepartAt < l.lastArrive {
		t.Errorf("departed at %d, before the arrival at %d", l.lastDepartAt, l.lastArrive)
	}
}

// A do-nothing observer added to the path keeps it allocation-free.
func TestObserverAllocatesNothing(t *testing.T) {
	in, out := &nullDevice{pkt: udp4(1500, aqm.ECT1, 1)}, &nullDevice{}
	h, err := New(testConfig(100_000_000_000, 0), in, out)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	o := h.dirs[Up]
	o.obs.add(everyPoint{})
	step := func() {
		in.left = 64
		if _, err := o.readBatch(); err != nil {
			t.Fatal(err)
		}
		o.release(clock() + 100_000)
	}
	step()
	if allocs := testing.AllocsPerRun(100, step); allocs != 0 {
		t.Errorf("%v allocations per batch of 64 packets with an observer, want 0", allocs)
	}
}

// BenchmarkOwnerObservers is the owner's data path per packet (as
// BenchmarkOwnerFlows, flow table off) with 0, 1 and 3 observers that do
// nothing: the difference is what calling an observer at its four points
// costs.
func BenchmarkOwnerObservers(b *testing.B) {
	for _, n := range []int{0, 1, 3} {
		b.Run(fmt.Sprintf("observers=%d", n), func(b *testing.B) {
			in, out := &flowsDevice{flows: 1}, &nullDevice{}
			cfg := testConfig(100_000_000_000, 0)
			cfg.NoFlows = true
			h, err := New(cfg, in, out)
			if err != nil {
				b.Fatal(err)
			}
			defer h.Close()
			o := h.dirs[Up]
			for range n {
				o.obs.add(everyPoint{})
			}
			b.ResetTimer()
			for done := 0; done < b.N; done += 64 {
				in.left = 64
				if _, err := o.readBatch(); err != nil {
					b.Fatal(err)
				}
				o.release(clock() + 100_000)
			}
		})
	}
}

// everyPoint does nothing, at every point.
type everyPoint struct{ quietObserver }

func (everyPoint) points() points { return atArrive | atRelease | atDepart }
