package aqm

import (
	"math/rand/v2"
	"testing"
)

// benchPackets is a mix of ECN codepoints and sizes, as a bottleneck sees.
var benchPackets = func() []Meta {
	ms := make([]Meta, 64)
	for i := range ms {
		ms[i] = Meta{ECN: ECN(i % 4), Len: int32(64 + (i*977)%1437), Slot: int32(i),
			Flow: uint32(i%8) * 0x2000_0001, DSCP: uint8(i % 3 * 45 % 64)}
	}
	return ms
}()

// runQueue keeps about 32 packets queued (over 2 MTU, so PI rolls happen)
// and moves one packet in and one out per iteration, 1 µs apart, running
// the PI update when due: the per-packet cost of a forwarding hop.
func runQueue(b *testing.B, q Queue) {
	now := int64(0)
	for i := range 32 {
		q.Enqueue(benchPackets[i], now)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		now += 1000
		if now >= q.NextUpdate() {
			q.Advance(now)
		}
		q.Enqueue(benchPackets[i&63], now)
		for {
			_, v, ok := q.Dequeue(now)
			if !ok || v.Action != Drop {
				break
			}
		}
	}
}

func BenchmarkDualPI2EnqueueDequeue(b *testing.B) {
	q := newTestDualPI2(b, nil)
	q.prob = MaxProb / 8 // some marking and dropping to do
	runQueue(b, q)
}

func BenchmarkFIFOEnqueueDequeue(b *testing.B) {
	f, err := NewFIFO(FIFOConfig{Limit: 1000})
	if err != nil {
		b.Fatal(err)
	}
	runQueue(b, f)
}

func BenchmarkCoDelEnqueueDequeue(b *testing.B) {
	q, err := NewCoDel(DefaultCodelConfig())
	if err != nil {
		b.Fatal(err)
	}
	runQueue(b, q)
}

// runLoaded is runQueue with the queue topped up to 32 packets before
// each dequeue, so drops do not drain it: the sojourn stays at 32 µs.
// An op is one packet sent (plus those dropped meanwhile).
func runLoaded(b *testing.B, q Queue) {
	now := int64(0)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		now += 1000
		if now >= q.NextUpdate() {
			q.Advance(now)
		}
		for j := 0; ; j++ {
			if n, _ := q.Len(); n >= 32 {
				break
			}
			q.Enqueue(benchPackets[(i+j)&63], now)
		}
		for {
			_, v, ok := q.Dequeue(now)
			if !ok || v.Action != Drop {
				break
			}
		}
	}
}

// The CoDel benchmark above never leaves CoDel's fast path: its packets
// wait 32 µs, far below the 5 ms target. This one sets target (10 µs)
// and interval (100 µs) below that sojourn, so the control law runs as
// at a loaded bottleneck: ECT packets marked, Not-ECT ones dropped, ever
// more often (interval/√count). signals/op says how often it acted.
func BenchmarkCoDelDroppingEnqueueDequeue(b *testing.B) {
	q := newTestCoDel(b, func(c *CodelConfig) { c.Target, c.Interval, c.ECN = 10_000, 100_000, true })
	runLoaded(b, q)
	s := q.Stats(0)
	b.ReportMetric(float64(s.CoDel.ECNMark+s.Dropped)/float64(b.N), "signals/op")
}

func BenchmarkPIEEnqueueDequeue(b *testing.B) {
	cfg := DefaultPIEConfig()
	cfg.ECN = true
	q, err := NewPIE(cfg, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		b.Fatal(err)
	}
	runQueue(b, q)
}

func BenchmarkFQCodelEnqueueDequeue(b *testing.B) {
	q, err := NewFQCodel(DefaultFQCodelConfig())
	if err != nil {
		b.Fatal(err)
	}
	runQueue(b, q)
}

// fq_codel with every flow's CoDel in its dropping state (see
// BenchmarkCoDelDroppingEnqueueDequeue).
func BenchmarkFQCodelDroppingEnqueueDequeue(b *testing.B) {
	q := newTestFQCodel(b, func(c *FQCodelConfig) { c.Target, c.Interval = 10_000, 100_000 })
	runLoaded(b, q)
	s := q.Stats(0)
	b.ReportMetric(float64(s.FQ.ECNMark+s.Dropped)/float64(b.N), "signals/op")
}

func BenchmarkDOCSISEnqueueDequeue(b *testing.B) {
	cfg := DefaultDOCSISConfig()
	cfg.NQB = true
	q, err := NewDOCSIS(cfg, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		b.Fatal(err)
	}
	q.pi.prob = MaxProb / 8
	runQueue(b, q)
}

func BenchmarkMetaOf(b *testing.B) {
	p := ipv4Packet(1, 1400)
	b.ReportAllocs()
	for i := range b.N {
		_ = MetaOf(p, int32(i))
	}
}

func BenchmarkSetCE(b *testing.B) {
	p := ipv4Packet(2, 1400)
	b.ReportAllocs()
	for range b.N {
		p[1] = 2 // back to ECT(0); the checksum drifts, SetCE does not care
		Header(p).SetCE()
	}
}

// The hot path allocates nothing: Enqueue, Dequeue, Advance and Header.
func TestNoAllocs(t *testing.T) {
	q := newTestDualPI2(t, nil)
	f, _ := NewFIFO(FIFOConfig{Limit: 100})
	others := []Queue{newTestCoDel(t, nil), newTestPIE(t, nil), newTestFQCodel(t, nil), newTestDOCSIS(t, nil)}
	fq := newTestFQCodel(t, func(c *FQCodelConfig) { c.Limit = 64 }) // overflow batch drops every time
	p4, p6 := ipv4Packet(1, 100), ipv6Packet(2, 100)
	now := int64(0)
	tests := []struct {
		name string
		f    func()
	}{
		{"DualPI2 Enqueue+Dequeue", func() {
			now += 1000
			q.Enqueue(benchPackets[now/1000&63], now)
			q.Enqueue(benchPackets[(now/1000+7)&63], now)
			q.Dequeue(now)
			q.Dequeue(now)
		}},
		{"DualPI2 Advance", func() { now += 16 * ms; q.Advance(now) }},
		{"DualPI2 Stats", func() { _ = q.Stats(now) }},
		{"FIFO Enqueue+Dequeue", func() { f.Enqueue(benchPackets[3], now); f.Dequeue(now) }},
		{"CoDel, PIE, fq_codel, docsis Enqueue+Dequeue+Advance+Stats", func() {
			now += 1000
			for _, o := range others {
				for i := range 3 {
					o.Enqueue(benchPackets[(now/1000+int64(i))&63], now-50*ms) // long sojourns: drops and marks
				}
				for range 2 {
					o.Dequeue(now)
				}
				o.Advance(now)
				_ = o.Stats(now)
			}
		}},
		{"fq_codel overflow", func() {
			for i := range 100 {
				fq.Enqueue(benchPackets[i&63], now)
			}
			for {
				if _, _, ok := fq.Dequeue(now); !ok {
					break
				}
			}
		}},
		{"Header", func() {
			for _, p := range [][]byte{p4, p6} {
				v := Header(p)
				_ = v.Valid()
				_ = v.Version()
				_ = v.ECN()
				_ = v.Len()
				_ = v.FlowHash()
				_ = v.SetCE()
				_ = MetaOf(p, 1)
			}
		}},
	}
	for _, tt := range tests {
		if n := testing.AllocsPerRun(1000, tt.f); n != 0 {
			t.Errorf("%s: %v allocations per run", tt.name, n)
		}
	}
}
