package shaper

import (
	"fmt"
	"strings"
	"testing"

	"github.com/pi2hop/pi2hop/aqm"
)

// steadyLoad offers one packet per call at 96 % of a 1 Gbit/s link and
// polls first, as a driver does; out is reused.
type steadyLoad struct {
	l   *Link
	now int64
	out []Event
	i   int32
	// frame, when set, goes to EnqueuePacket (a fault's selectors read it).
	frame []byte
}

func (s *steadyLoad) step() {
	s.now += 12_500 // 1500 B every 12.5 µs = 960 Mbit/s
	s.out = s.l.Poll(s.now, s.out[:0])
	m := aqm.Meta{Len: 1500, Slot: s.i, ECN: aqm.ECN(s.i & 3)}
	if s.frame != nil {
		s.l.EnqueuePacket(m, s.frame, s.now)
	} else {
		s.l.Enqueue(m, s.now)
	}
	s.i++
}

func newSteadyLoad(t testing.TB, q aqm.Queue) *steadyLoad {
	l := newTestLink(t, Config{Rate: Const{1e9}, Delay: 10 * ms, Loss: &GilbertElliott{P: 0.01, R: 0.5, LossBad: 1}}, q)
	s := &steadyLoad{l: l, out: make([]Event, 0, 64)}
	for range 10_000 { // warm up: fill the delay line, grow the fake's ring
		s.step()
	}
	return s
}

func TestLinkPollNoAlloc(t *testing.T) {
	queues := map[string]aqm.Queue{"fake": newFakeQueue(), "dualpi2": newDualPI2(t)}
	for name, q := range queues {
		s := newSteadyLoad(t, q)
		if n := testing.AllocsPerRun(10_000, s.step); n != 0 {
			t.Errorf("%s: %.2f allocations per packet; want 0", name, n)
		}
		if st := s.l.Stats(); st.Delivered == 0 || st.Lost == 0 {
			t.Errorf("%s: workload delivered %d, lost %d", name, st.Delivered, st.Lost)
		}
	}
	// Jitter and aggregation allocate nothing either.
	s := newSteadyLoad(t, newFakeQueue())
	if err := s.l.SetJitter(Jitter{Amount: ms, Dist: DistParetoNormal}); err != nil {
		t.Fatal(err)
	}
	if err := s.l.SetAggregate(Aggregate{Interval: ms, Bytes: 200_000}, s.now); err != nil {
		t.Fatal(err)
	}
	for range 10_000 {
		s.step()
	}
	if n := testing.AllocsPerRun(10_000, s.step); n != 0 {
		t.Errorf("jitter+aggregate: %.2f allocations per packet; want 0", n)
	}
	// ECN path faults, before and after the queue, with the selectors
	// reading the packet's ports and share= drawing: nothing either.
	for _, spec := range []string{"mangle,after=10p,share=50%,proto=udp,dport=5000", "ce-bleach,after,share=50%,sport=4000", "drop-ect,after"} {
		s := newSteadyLoad(t, newDualPI2(t))
		s.frame = udpFrame()
		f, err := ParseFault(spec)
		if err != nil {
			t.Fatal(err)
		}
		s.l.SetFault(f, s.now)
		if n := testing.AllocsPerRun(10_000, s.step); n != 0 {
			t.Errorf("fault %s: %.2f allocations per packet; want 0", spec, n)
		}
		if st := s.l.Stats(); st.Faults[f.Kind] == 0 {
			t.Errorf("fault %s acted on no packet", spec)
		}
	}
}

// udpFrame is an IPv4/UDP packet of 1500 bytes from port 4000 to 5000.
func udpFrame() []byte {
	p := make([]byte, 1500)
	p[0], p[2], p[3], p[9] = 0x45, 1500>>8, 1500&0xff, 17
	p[20], p[21], p[22], p[23] = 4000>>8, 4000&0xff, 5000>>8, 5000&0xff
	return p
}

// BenchmarkLinkFault is the link's per-packet cost with an ECN path
// fault: off (the zero Fault, what every link without --ecn-fault runs;
// compare BenchmarkLinkPacket/dualpi2, the same work), before the queue
// with selectors and share=, and after it.
func BenchmarkLinkFault(b *testing.B) {
	for _, bc := range []struct{ name, spec string }{
		{"off", "none"},
		{"before", "ect1-to-ect0,share=50%,proto=udp,dport=5000"},
		{"after", "ce-bleach,after"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			s := newSteadyLoad(b, newDualPI2(b))
			s.frame = udpFrame()
			f, err := ParseFault(bc.spec)
			if err != nil {
				b.Fatal(err)
			}
			s.l.SetFault(f, s.now)
			b.ReportAllocs()
			for b.Loop() {
				s.step()
			}
		})
	}
}

// BenchmarkLinkPacket is the shaper's per-packet cost: one Enqueue and one
// Poll (which dequeues, serialises, applies loss and releases), in virtual
// time at 96 % load.
func BenchmarkLinkPacket(b *testing.B) {
	for _, bc := range []struct {
		name string
		q    func() aqm.Queue
	}{
		{"fake", func() aqm.Queue { return newFakeQueue() }},
		{"dualpi2", func() aqm.Queue { return newDualPI2(b) }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			s := newSteadyLoad(b, bc.q())
			b.ReportAllocs()
			for b.Loop() {
				s.step()
			}
		})
	}
}

// Finish is on the per-packet path for every kind of rate.
func TestRateFinishNoAlloc(t *testing.T) {
	sc, _ := NewSchedule([]Step{{0, 1e7}, {ms, 0}, {2 * ms, 2e7}})
	rates := map[string]Rate{"const": Const{1e9}, "trace": traceOf(t, "1\n1\n3\n"), "schedule": sc}
	for name, r := range rates {
		start := int64(0)
		if n := testing.AllocsPerRun(1000, func() { start = r.Finish(start, 1500) }); n != 0 {
			t.Errorf("%s: %.1f allocations per Finish", name, n)
		}
	}
}

func BenchmarkRateFinish(b *testing.B) {
	sc, _ := NewSchedule([]Step{{0, 1e9}, {ms, 5e8}, {2 * ms, 1e9}})
	var times strings.Builder
	for i := range 1000 { // ~100 Mbit/s: 8 or 9 opportunities per ms
		for range 8 + i%3/2 {
			fmt.Fprintf(&times, "%d\n", i+1)
		}
	}
	for _, bc := range []struct {
		name string
		r    Rate
	}{{"const", Const{1e9}}, {"trace", traceOf(b, times.String())}, {"schedule", sc}} {
		b.Run(bc.name, func(b *testing.B) {
			start := int64(0)
			for b.Loop() {
				start = bc.r.Finish(start, 1500) % (1 << 40)
			}
		})
	}
}
