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
	// A fixed hash key: which flows share a set, and so whether a set
	// overflows at half load, is then the same in every run (with a
	// random one a few of the 4096 flows are evicted in some runs).
	tb.hashKey = [2]uint64{0x9e3779b97f4a7c15, 0x632be59bd9b4e019}
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
	t.Logf("table of %d flows, %d outstanding each way: %d bytes", tb.Capacity(), cfg.Outstanding, tb.Bytes())
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 64<<10 {
		t.Errorf("feeding %d segments allocated %d bytes, want none", flows*segments, grew)
	}
	st := tb.Stats()
	if st.Evicted != 0 {
		t.Errorf("%d flows evicted from a table of %d holding %d", st.Evicted, tb.Capacity(), flows)
	}
	var held uint64
	for i := range tb.flows {
		if tb.tags[i] == 0 {
			continue
		}
		n := tb.flows[i].snd[Up].n
		if n < uint32(cfg.Outstanding)/2 || n > uint32(cfg.Outstanding) {
			t.Fatalf("flow %d holds %d segments, want %d to %d", i, n, cfg.Outstanding/2, cfg.Outstanding)
		}
		held += uint64(n)
	}
	// Each flow's ring filled and was thinned; the held and the dropped
	// are the segments remembered, at most all of them.
	if st.Dropped == 0 || st.Dropped+held > flows*segments {
		t.Errorf("dropped %d and held %d of %d segments", st.Dropped, held, flows*segments)
	}
	// A flow still times its segments: an ACK of the newest one it holds
	// gives a sample.
	i := -1
	for j := range tb.flows {
		if tb.tags[j] != 0 {
			i = j
			break
		}
	}
	f := &tb.flows[i]
	s := f.snd[Up]
	newest := tb.slots[tb.ring(i, Up)+(s.head+s.n-1)&(tb.out-1)].key
	q := tcpSeq(ackf, 1, newest, 0)
	q.sport = uint16(f.key.ports >> 16)
	tb.Packet(q.build(Down), Down, now+5)
	if st := tb.Stats(); st.Samples != 1 {
		t.Errorf("%d samples after acknowledging a flow's newest segment, want 1", st.Samples)
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

// TestThinning: a full ring drops every other packet, the oldest kept,
// so that a flow with more packets in flight than the ring holds is still
// timed: 200 TSvals of a 1 ms clock in flight over a 200 ms round trip,
// each echoed 200 ms after it was sent, through a ring of 8.
func TestThinning(t *testing.T) {
	tb, err := NewTable(Config{Flows: 16, Outstanding: 8})
	if err != nil {
		t.Fatal(err)
	}
	var got []int64
	tb.onSample = func(h Half, ns int64) { got = append(got, ns) }
	const rtt = 200
	for at := int64(0); at < 1000; at++ {
		tb.Packet(tcpTS(ackf, uint32(1000+100*at), 1, 100, uint32(at), 7).build(Up), Up, at*ms)
		if at >= rtt {
			tb.Packet(tcpTS(ackf, 1, uint32(1100+100*(at-rtt)), 0, 900, uint32(at-rtt)).build(Down), Down, at*ms)
		}
	}
	// 200 in flight through a ring of 8: one TSval in 32 to 64 is
	// timed, so 800 echoes give 12 to 25 samples.
	if len(got) < 12 {
		t.Fatalf("%d samples of 800 echoes, want at least 12", len(got))
	}
	t.Logf("%d samples of 800 echoes", len(got))
	for _, ns := range got {
		if ns != rtt*ms {
			t.Fatalf("sample %d ns, want %d ms", ns, rtt)
		}
	}
	// The ring of a flow never answered holds its oldest packet.
	tb.Reset()
	for k := range uint32(21) {
		tb.push(0, Up, k+1, int64(k))
	}
	s := tb.flows[0].snd[Up]
	if first := tb.slots[tb.ring(0, Up)+s.head].key; first != 1 || s.n < 4 || s.n > 8 {
		t.Fatalf("ring holds %d packets from key %d, want 4 to 8 from key 1", s.n, first)
	}
	if at, ok := tb.popExact(0, Up, 21); !ok || at != 20 {
		t.Fatalf("the newest packet: %d, %v; want kept, at 20", at, ok)
	}
}

// TestEvictedHistograms: a flow that takes an evicted flow's place starts
// with empty histograms.
func TestEvictedHistograms(t *testing.T) {
	tb, err := NewTable(Config{Flows: 16, Outstanding: 2})
	if err != nil {
		t.Fatal(err)
	}
	for id := range uint16(200) {
		at := int64(id) * 10 * ms
		tb.Packet(icmp(false, icmpEchoRequest, id, 1).build(Up), Up, at)
		tb.Packet(icmp(false, icmpEchoReply, id, 1).build(Down), Down, at+ms)
	}
	for _, f := range snap(tb).Flows() {
		var n uint64
		for _, c := range f.Hists[ServerHalf].Counts {
			n += uint64(c)
		}
		if n != 1 || f.ServerHalf.N != 1 || f.ServerHalf.MaxMs != 1 {
			t.Fatalf("flow %v: %d counted, summary %+v; want its one sample of 1 ms", f.Client, n, f.ServerHalf)
		}
	}
}
