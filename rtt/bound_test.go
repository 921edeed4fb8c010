package rtt

import (
	"runtime"
	"testing"
)

// TestNoAllocs: the owner's Packet allocates nothing, for every kind of
// packet it times, new flows and evictions included.
func TestNoAllocs(t *testing.T) {
	tb, err := NewTable(Config{Flows: 16, Outstanding: 4})
	if err != nil {
		t.Fatal(err)
	}
	var pkts [][]byte
	var dirs []Dir
	for i := range 64 { // more flows than the table holds: evictions
		p := tcpTS(ackf, uint32(1000+100*i), 1, 100, uint32(i), 7)
		p.sport = uint16(1000 + i)
		q := tcpSeq(ackf, 1, uint32(1100+100*i), 0)
		q.sport = uint16(1000 + i)
		pkts = append(pkts, p.build(Up), q.build(Down), icmp(i%2 == 0, icmpEchoRequest, uint16(i), 1).build(Up), quic(i%3 == 0, i%2 == 0).build(Down))
		dirs = append(dirs, Up, Down, Up, Down)
	}
	for i := range 8 { // one flow with more outstanding packets than it keeps
		pkts = append(pkts, tcpTS(ackf, uint32(1000+100*i), 1, 100, uint32(i), 7).build(Up))
		dirs = append(dirs, Up)
	}
	now := int64(0)
	allocs := testing.AllocsPerRun(100, func() {
		for i, p := range pkts {
			now += 1000
			tb.Packet(p, dirs[i], now)
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per run of %d packets, want 0", allocs, len(pkts))
	}
	s := NewSnapshot(tb)
	if allocs := testing.AllocsPerRun(10, func() { tb.CopyTo(s, now) }); allocs != 0 {
		t.Fatalf("CopyTo: %v allocations, want 0", allocs)
	}
	if tb.Stats().Evicted == 0 || tb.Stats().Dropped == 0 {
		t.Fatalf("stats %+v: the run should have evicted flows and dropped outstanding packets", tb.Stats())
	}
}

// TestBounded: 4096 flows, each with 1000 segments outstanding (data sent
// without timestamps, never acknowledged), fit in the memory NewTable
// allocated: the heap does not grow while they are fed, each flow keeps
// its last Outstanding segments and the rest are dropped and counted.
func TestBounded(t *testing.T) {
	const flows, segments = 4096, 1000
	// Twice the flows' number: a table of two-choice sets evicts a little
	// before it is full, and this test is about the outstanding bound.
	cfg := Config{Flows: 2 * flows, Outstanding: 64}
	tb, err := NewTable(cfg)
	if err != nil {
		t.Fatal(err)
	}
	p := tcpSeq(ackf, 0, 1, 100).build(Up)
	sport := p[20:22]
	seq := p[24:28]
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	now := int64(0)
	for s := range segments {
		be.PutUint32(seq, uint32(1000+100*s))
		for f := range flows {
			be.PutUint16(sport, uint16(1024+f))
			now++
			tb.Packet(p, Up, now)
		}
	}
	runtime.ReadMemStats(&after)
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 64<<10 {
		t.Errorf("feeding %d segments allocated %d bytes, want none", flows*segments, grew)
	}
	st := tb.Stats()
	if st.Evicted != 0 {
		t.Errorf("%d flows evicted from a table of %d holding %d", st.Evicted, tb.Capacity(), flows)
	}
	if want := uint64(flows * (segments - cfg.Outstanding)); st.Dropped != want {
		t.Errorf("dropped %d outstanding segments, want %d", st.Dropped, want)
	}
	for i := range tb.flows {
		if tb.tags[i] != 0 && tb.flows[i].snd[Up].n != uint32(cfg.Outstanding) {
			t.Fatalf("flow %d holds %d segments, want %d", i, tb.flows[i].snd[Up].n, cfg.Outstanding)
		}
	}
	// The newest segments are the ones kept: an ACK of the last one times it.
	be.PutUint16(sport, 1024)
	q := tcpSeq(ackf, 1, uint32(1000+100*segments), 0)
	q.sport, q.dport = 1024, 80
	tb.Packet(q.build(Down), Down, now+5)
	if st := tb.Stats(); st.Samples != 1 {
		t.Errorf("%d samples after acknowledging a flow's last segment, want 1", st.Samples)
	}
}

// TestEvictOldest: a full table makes room by evicting, of the flows in
// the two sets a new flow may take, the one seen longest ago, and counts
// it.
func TestEvictOldest(t *testing.T) {
	tb, err := NewTable(Config{Flows: 16, Outstanding: 2})
	if err != nil {
		t.Fatal(err)
	}
	p := icmp(false, icmpEchoRequest, 0, 1)
	for i := range 200 {
		p.id = uint16(i)
		k := flowKey{version: 4, proto: protoICMP, ports: uint32(i)<<16 | uint32(i)}
		k.addrs[0], k.addrs[2] = uint64(le.Uint32([]byte{10, 0, 0, 1})), uint64(le.Uint32([]byte{10, 0, 1, 1}))
		want := -1 // the victim by the rule, worked out from the hash
		if countUsed(tb) == tb.Capacity() {
			a, b := tb.setsOf(tb.hash(&k) | 1)
			for _, base := range []int{a, b} {
				for j := base; j < base+flowWays; j++ {
					if want < 0 || tb.flows[j].lastSeen < tb.flows[want].lastSeen {
						want = j
					}
				}
			}
		}
		tb.Packet(p.build(Up), Up, int64(i))
		if got := tb.find(&k); got < 0 || (want >= 0 && got != want) {
			t.Fatalf("flow %d went to entry %d, want %d", i, got, want)
		}
	}
	if used, st := countUsed(tb), tb.Stats(); used != 16 || st.Evicted != 200-16 {
		t.Fatalf("%d flows in use, %d evicted; want 16 and %d", used, st.Evicted, 200-16)
	}
}

func countUsed(tb *Table) (n int) {
	for _, tg := range tb.tags {
		if tg != 0 {
			n++
		}
	}
	return n
}

func TestConfigValidate(t *testing.T) {
	for _, c := range []Config{{0, 1}, {1, 0}, {MaxFlows + 1, 1}, {1, MaxOutstanding + 1}} {
		if _, err := NewTable(c); err == nil {
			t.Errorf("%+v: no error", c)
		}
	}
	tb, err := NewTable(Config{Flows: 100, Outstanding: 3})
	if err != nil || tb.Capacity() != 128 || tb.out != 4 {
		t.Fatalf("100 flows, 3 outstanding: capacity %d, ring %d, %v; want 128, 4", tb.Capacity(), tb.out, err)
	}
}
