package replay

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/figure"
	"github.com/pi2hop/pi2hop/shaper"
)

// TestCSVFlowHash pins the hash of a few CSV flow ids and the fq_codel
// bucket it gives (1024 buckets: the kernel's reciprocal_scale, h·1024 >>
// 32). The expected values were worked out from the definition with an
// independent MurmurHash3 word mix: initial state 0x2f1a5e37 ^ key, the
// words 0xc6120001 (198.18.0.1), 0xc6120002 (198.18.0.2), 17 (UDP) and the
// id (the ports), then fmix32; key = low ^ high half of the seed.
func TestCSVFlowHash(t *testing.T) {
	for _, c := range []struct {
		seed   uint64
		id     uint32
		hash   uint32
		bucket int32
	}{
		{1, 0, 0xe7d801f9, 927},
		{1, 1, 0x2438b371, 144},
		{1, 2, 0x1297f358, 74},
		{1, 3, 0x3131bc07, 196},
		{1, 70000, 0xf0e2def0, 963},
		{0x123456789, 0, 0xb811a132, 736},
		{0x123456789, 1, 0x01c8cae5, 7},
		{0x123456789, 2, 0xf69b0c47, 986},
		{0x123456789, 3, 0x32969da5, 202},
		{0x123456789, 70000, 0x607c98a6, 385},
	} {
		h := CSVFlowHash(c.id, FlowKey(c.seed))
		if h != c.hash {
			t.Errorf("seed %#x id %d: hash %#08x, want %#08x", c.seed, c.id, h, c.hash)
		}
		// The bucket as fq_codel itself picks it: its verdict's Sub is
		// the flow number, bucket + 1.
		cfg := fqCodel(10_000_000)
		cfg.Seed = c.seed
		r, _ := run(t, cfg, []Packet{{Time: 0, Len: 100, Flow: c.id}})
		if got := int32(r.fate(t, 0).ev.Verdict.Sub) - 1; got != c.bucket {
			t.Errorf("seed %#x id %d: fq_codel bucket %d, want %d", c.seed, c.id, got, c.bucket)
		}
	}
}

func fqCodel(bps uint64) Config {
	spec, _ := aqm.DefaultSpec(aqm.KindFQCodel)
	return Config{Link: shaper.Config{Rate: shaper.Const{BitsPerSecond: bps}}, Queue: spec, Seed: 1}
}

// TestFQCodelSeparatesCSVFlows: a 14 Mbit/s bulk flow (id 1) and a
// 200 kbit/s sparse flow of 100-byte packets (id 2) through fq_codel at
// 10 Mbit/s, from a CSV trace. In separate buckets the sparse flow is a
// new flow at each packet, served as soon as the link is free: its
// sojourn is at most the rest of one bulk packet's serialisation,
// 8·bytes/rate, and each of its packets counts as a new flow. Sharing the
// bulk flow's bucket it would wait behind the bulk flow's standing queue
// (CoDel's target keeps it near 5 ms at best).
//
// The bulk packets are 1000 bytes in the case that shows a sojourn p99
// under 1 ms (8·1000/10⁷ = 0.8 ms): with 1500-byte ones the wait for the
// packet on the wire alone is 8·1500/10⁷ = 1.2 ms, which no scheduler
// that does not preempt a packet being sent can shorten, so that case
// holds the sparse flow to 1.2 ms instead.
func TestFQCodelSeparatesCSVFlows(t *testing.T) {
	const seconds = 5
	for _, c := range []struct {
		bulkBytes int
		maxP99    int64 // ns
	}{
		{1000, 800_000},
		{1500, 1_200_000},
	} {
		t.Run(fmt.Sprint(c.bulkBytes), func(t *testing.T) {
			var b strings.Builder
			b.WriteString("time_ns,bytes,ecn,flow\n")
			bulkGap := int64(c.bulkBytes) * 8 * 1e9 / 14_000_000
			const sparseGap = 100 * 8 * 1e9 / 200_000 // 4 ms
			nb, ns := int64(0), int64(0)
			for {
				tb, ts := nb*bulkGap, ns*sparseGap+1_000 // never at the same time
				if min(tb, ts) >= seconds*1e9 {
					break
				}
				if tb <= ts {
					fmt.Fprintf(&b, "%d,%d,0,1\n", tb, c.bulkBytes)
					nb++
				} else {
					fmt.Fprintf(&b, "%d,100,0,2\n", ts)
					ns++
				}
			}
			e, err := New(fqCodel(10_000_000))
			if err != nil {
				t.Fatal(err)
			}
			var sj sparseSojourns
			res, err := e.Run(context.Background(), NewCSVSource(strings.NewReader(b.String()), "trace.csv"), &sj)
			if err != nil {
				t.Fatal(err)
			}
			if len(sj.ns) < int(ns)*9/10 {
				t.Fatalf("%d of the sparse flow's %d packets delivered", len(sj.ns), ns)
			}
			slices.Sort(sj.ns)
			p99 := figure.Quantile(sj.ns, 0.99)
			if p99 > c.maxP99 {
				t.Errorf("sparse flow's sojourn p99 %d ns, want <= %d", p99, c.maxP99)
			}
			if n := res.Stats.FQ.NewFlowCount; n < uint64(ns)/2 {
				t.Errorf("new_flow_count %d, want about one per sparse packet (%d)", n, ns)
			}
			t.Logf("sparse p99 %.3f ms over %d packets, new_flow_count %d", float64(p99)/1e6, len(sj.ns), res.Stats.FQ.NewFlowCount)
		})
	}
}

// sparseSojourns keeps the sojourns of flow 2's delivered packets.
type sparseSojourns struct{ ns []int64 }

func (s *sparseSojourns) Arrival(*Packet) error { return nil }
func (s *sparseSojourns) Depart(p *Packet, ev *shaper.Event) error {
	if p.Flow == 2 {
		s.ns = append(s.ns, ev.Deq-ev.Meta.Arrival)
	}
	return nil
}
func (s *sparseSojourns) Drop(*Packet, *shaper.Event, DropPoint) error { return nil }
func (s *sparseSojourns) Update(int64, *aqm.Stats) error               { return nil }
