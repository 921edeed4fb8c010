package replay

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/shaper"
)

// csvOf writes packets as a CSV trace.
func csvOf(in []Packet) string {
	var b strings.Builder
	b.Grow(len(in) * 24)
	b.WriteString("time_ns,bytes,ecn,flow\n")
	for _, p := range in {
		fmt.Fprintf(&b, "%d,%d,%d,%d\n", p.Time, p.Len, p.ECN, p.Flow)
	}
	return b.String()
}

// counter is a Handler that only counts, so a benchmark measures the
// source and the engine, not an output format.
type counter struct{ arrivals, departs, drops, updates int }

func (c *counter) Arrival(*Packet) error                        { c.arrivals++; return nil }
func (c *counter) Depart(*Packet, *shaper.Event) error          { c.departs++; return nil }
func (c *counter) Drop(*Packet, *shaper.Event, DropPoint) error { c.drops++; return nil }
func (c *counter) Update(int64, *aqm.Stats) error               { c.updates++; return nil }

// TestReplay80k replays 10 s of 1500-byte packets at 95 Mbit/s on a
// 100 Mbit/s link (~79 000 packets) and checks the link model on every
// packet: 120 µs on the wire each, one at a time, never before arrival.
func TestReplay80k(t *testing.T) {
	if testing.Short() {
		t.Skip("80k-packet replay in -short mode")
	}
	rng := rand.New(rand.NewPCG(1, 0))
	var in []Packet
	for tm := 0.0; tm < 10e9; {
		in = append(in, Packet{Time: int64(tm), Len: 1500, ECN: aqm.ECN(1 + rng.IntN(2))}) // ECT(1) or ECT(0)
		tm += rng.ExpFloat64() * 1500 * 8e9 / 95e6
	}
	r, res := run(t, dualpi2(100_000_000, nil), in)
	var lastDep int64
	for _, d := range r.of("depart") {
		if d.ev.Dep-d.ev.Deq != 120_000 { // 1500 B at 100 Mbit/s
			t.Fatalf("packet %d: transmission %d ns, want 120 µs", d.i, d.ev.Dep-d.ev.Deq)
		}
		if d.ev.Deq < in[d.i].Time || d.ev.Deq < lastDep {
			t.Fatalf("packet %d dequeued at %d: before its arrival %d or the previous departure %d", d.i, d.ev.Deq, in[d.i].Time, lastDep)
		}
		lastDep = d.ev.Dep
	}
	if res.Packets != len(in) || len(r.of("depart"))+len(r.of("drop")) != len(in) {
		t.Errorf("%d packets, %d departures + %d drops, want %d", res.Packets, len(r.of("depart")), len(r.of("drop")), len(in))
	}
	if util := float64(res.Busy) / float64(res.LastDeparture-res.FirstArrival); util < 0.9 || util > 1 {
		t.Errorf("utilisation %v, want about 0.95", util)
	}
}

// BenchmarkReplay80k replays an 80 000-packet CSV trace (Poisson
// arrivals at 95 Mbit/s, mixed sizes and codepoints) through a 100 Mbit/s
// link and DualPI2: parsing, engine and every callback; not the JSON
// `pi2hop replay` prints. The target is 1 s.
func BenchmarkReplay80k(b *testing.B) {
	trace := csvOf(genPackets(80_000, 95e6, 1))
	b.SetBytes(int64(len(trace)))
	for b.Loop() {
		e, err := New(dualpi2(100_000_000, nil))
		if err != nil {
			b.Fatal(err)
		}
		var c counter
		if _, err := e.Run(context.Background(), NewCSVSource(strings.NewReader(trace), "bench"), &c); err != nil {
			b.Fatal(err)
		}
		if c.arrivals != 80_000 {
			b.Fatalf("%d arrivals", c.arrivals)
		}
	}
}
