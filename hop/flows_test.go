package hop

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"testing"
	"time"
	"unsafe"

	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/internal/race"
	"github.com/pi2hop/pi2hop/pcap/pcaptest"
)

// pkt4 builds an IPv4 packet of n bytes of protocol proto from
// 10.254.1.2:sport to 10.254.2.2:9 with the given ECN bits.
func pkt4(n int, ecn aqm.ECN, proto byte, sport uint16) []byte {
	headers := 28
	if proto == 6 {
		headers = 40
	}
	return pcaptest.Packet{Src: netip.AddrFrom4([4]byte{10, 254, 1, 2}), Dst: netip.AddrFrom4([4]byte{10, 254, 2, 2}),
		Proto: proto, SPort: sport, DPort: 9, ECN: ecn, Payload: n - headers}.Build()
}

// TestFlowClasses: the class a flow gets from the codepoints it sends,
// and when it changed. CE says nothing of the sender; TCP's Not-ECT
// control packets and retransmissions (RFC 3168 §6.1.4-5) are no change.
func TestFlowClasses(t *testing.T) {
	N, E1, E0, CE := aqm.NotECT, aqm.ECT1, aqm.ECT0, aqm.CE
	for _, c := range []struct {
		name    string
		proto   uint8
		ecns    []aqm.ECN
		class   string
		changed string
		at      int // index of the packet it changed at
	}{
		{"udp ect1", 17, []aqm.ECN{E1, E1, CE, E1}, ClassL4S, "", 0},
		{"udp ect0", 17, []aqm.ECN{E0, CE, E0}, ClassClassicECN, "", 0},
		{"udp not-ect", 17, []aqm.ECN{N, N}, ClassNotECT, "", 0},
		{"ce first", 17, []aqm.ECN{CE, E1}, ClassL4S, "", 0},
		{"only ce", 17, []aqm.ECN{CE, CE}, ClassUnknown, "", 0},
		{"udp ect1 to not-ect", 17, []aqm.ECN{E1, E1, N, E1}, ClassChanged, "Not-ECT", 2},
		{"udp ect1 to ect0", 17, []aqm.ECN{E1, E0, N}, ClassChanged, "ECT(0)", 1},
		{"tcp syn then ect1", 6, []aqm.ECN{N, E1, N, E1}, ClassL4S, "", 0},
		{"tcp not-ect", 6, []aqm.ECN{N, N, N}, ClassNotECT, "", 0},
		{"tcp ect0 to ect1", 6, []aqm.ECN{N, E0, N, E1}, ClassChanged, "ECT(1)", 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			var tb flowCounters
			tb.reset(qprotScorer(testConfig(10_000_000, 0).Up))
			for k, e := range c.ecns {
				p := pkt4(100, e, c.proto, 1000)
				i := tb.lookup(p, aqm.Header(p).FlowHashKeyed(tb.key), int64(k+1)*1000)
				tb.arrive(i, e, len(p), int64(k+1)*1000)
			}
			var cp flowCopy
			o := &owner{rep: reporter{flows: &tb}}
			o.copyFlows(&cp, 10_000)
			ft := cp.table(Up, -1, nil)
			if len(ft.Flows) != 1 {
				t.Fatalf("%d flows, want 1", len(ft.Flows))
			}
			f := ft.Flows[0]
			if f.Class != c.class || f.ChangedTo != c.changed {
				t.Errorf("class %q changed to %q, want %q %q", f.Class, f.ChangedTo, c.class, c.changed)
			}
			if c.changed != "" && f.ChangedAt.UnixNano()-UnixOffset() != int64(c.at+1)*1000 {
				t.Errorf("changed at %d, want %d", f.ChangedAt.UnixNano()-UnixOffset(), (c.at+1)*1000)
			}
		})
	}
}

// TestFlowKeys: the 5-tuple as read, one flow per tuple, the same flow
// for every packet of a tuple.
func TestFlowKeys(t *testing.T) {
	var tb flowCounters
	tb.reset(qprotScorer(testConfig(10_000_000, 0).Up))
	v6 := pcaptest.Packet{Src: netip.MustParseAddr("::1"), Dst: netip.MustParseAddr("::2"), Proto: 17, SPort: 443, DPort: 5555}.Build()
	for _, p := range [][]byte{pkt4(100, 0, 17, 1), pkt4(100, 0, 6, 1), pkt4(100, 0, 17, 2), v6, pkt4(60, 0, 1, 7)} {
		for k := 0; k < 3; k++ {
			tb.arrive(tb.lookup(p, aqm.Header(p).FlowHashKeyed(tb.key), 1), 0, len(p), 1)
		}
	}
	var cp flowCopy
	(&owner{rep: reporter{flows: &tb}}).copyFlows(&cp, 2)
	got := map[string]uint64{}
	for _, f := range cp.table(Up, -1, nil).Flows {
		got[f.Proto+" "+f.Src+" "+f.Dst] = f.In.NotECT.Packets
	}
	want := map[string]uint64{
		"udp 10.254.1.2:1 10.254.2.2:9": 3, "tcp 10.254.1.2:1 10.254.2.2:9": 3, "udp 10.254.1.2:2 10.254.2.2:9": 3,
		"udp [::1]:443 [::2]:5555": 3, "icmp 10.254.1.2:0 10.254.2.2:0": 3,
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("flows %v, want %v", got, want)
	}
}

// TestFlowTableFull: a flow's two sets hold 2·flowWays flows; a new flow
// takes its home way when free, else a free way of the set with more
// room, else the place of the flow of its sets seen longest ago that has
// nothing in flight; when all have a packet in flight it is counted as
// other. The hashes are chosen to share both sets.
func TestFlowTableFull(t *testing.T) {
	var tb flowCounters
	tb.reset(qprotScorer(testConfig(10_000_000, 0).Up))
	const setA, setB = 5, 77
	hash := func(home int) uint32 { return 1 | setA<<1 | uint32(home)<<flowHomeShift | setB<<flowAltShift }
	var idx []int32
	for k := range 2 * flowWays {
		pk := pkt4(100, 0, 17, uint16(k+1))
		i := tb.lookup(pk, hash(k%flowWays), int64(10+k))
		want := setA*flowWays + k // homes first, then the second set
		if k >= flowWays {
			want = setB*flowWays + k - flowWays
		}
		if i != int32(want) {
			t.Fatalf("flow %d took entry %d, want %d", k, i, want)
		}
		tb.arrive(i, 0, 100, int64(10+k))
		tb.held(i)
		idx = append(idx, i)
	}
	for k, i := range idx { // the same flows again: found where they are
		pk := pkt4(100, 0, 17, uint16(k+1))
		if j := tb.lookup(pk, hash(k%flowWays), 50); j != i {
			t.Errorf("flow %d found at %d, want %d", k, j, i)
		}
	}
	late := pkt4(100, 0, 17, 999)
	if i := tb.lookup(late, hash(3), 100); i != otherFlow {
		t.Fatalf("a new flow in two full sets of busy flows got entry %d, want other", i)
	}
	tb.hot[idx[12]].inFlight-- // idle, seen at 22
	tb.hot[idx[5]].inFlight--  // idle, seen at 15
	if i := tb.lookup(late, hash(3), 100); i != idx[5] || tb.evicted != 1 {
		t.Errorf("new flow took entry %d (evicted %d), want %d: the oldest idle", i, tb.evicted, idx[5])
	}
}

// TestFlowTableHoldsItsSize: FlowTableSize flows, hashed as the hop
// hashes them, nearly all keep their place through a second round (each
// found where it was first put). With one set per flow, the flows beyond
// a full set's ways would be E[(X−8)+]/8 = 14 % of them (X Poisson with
// mean 8, the flows per set) and each would evict another at each
// packet; the two choices leave a few: at most 3 % here.
func TestFlowTableHoldsItsSize(t *testing.T) {
	var tb flowCounters
	tb.reset(qprotScorer(testConfig(10_000_000, 0).Up))
	d := &flowsDevice{flows: FlowTableSize}
	d.TryRead(nil, nil)
	at := make([]int32, len(d.pkts))
	moved := 0
	for round := range 2 {
		for k, p := range d.pkts {
			i := tb.lookup(p, aqm.Header(p).FlowHashKeyed(tb.key), int64(round*len(d.pkts)+k))
			switch {
			case i == otherFlow:
				t.Fatalf("round %d: flow %d counted as other in a table with no packet in flight", round, k)
			case round == 0:
				at[k] = i
			case i != at[k]:
				moved++
			}
		}
	}
	if moved > FlowTableSize*3/100 {
		t.Errorf("%d of %d flows lost their place in a second round (%d evictions), want at most 3 %%", moved, FlowTableSize, tb.evicted)
	}
}

// TestFlowHistQuantiles: the buckets' bounds, and nearest-rank quantiles
// as the figure package defines them.
func TestFlowHistQuantiles(t *testing.T) {
	for _, c := range []struct {
		v     int64
		index int
		upper int64
	}{
		{0, 0, 1023}, {1023, 0, 1023}, {1024, 1, 1279}, {1279, 1, 1279}, {1280, 2, 1535},
		{2047, 4, 2047}, {2048, 5, 2559}, {1_000_000, 40, 1_048_575}, {1 << 40, flowHistBuckets - 1, 1<<34 - 1},
	} {
		if i := flowHistIndex(c.v); i != c.index || flowHistUpper(i) != c.upper {
			t.Errorf("%d: bucket %d (upper %d), want %d (upper %d)", c.v, i, flowHistUpper(i), c.index, c.upper)
		}
	}
	var h flowHist
	for i := 0; i < 98; i++ {
		h.add(100_000) // bucket 23: 98 304..114 687
	}
	h.add(2_000_000) // 1 966 080..2 097 151
	h.add(2_000_000)
	// 100 samples: p50 is the 50th, p99 the 99th (a 2 ms one).
	if p50, p99 := h.quantile(0.5), h.quantile(0.99); p50 != 114_687 || p99 != 2_097_151 {
		t.Errorf("p50 %d p99 %d, want 114687 2097151", p50, p99)
	}
}

// TestFlowCountsThroughHop: three flows at once through a running hop at
// 10 Mbit/s: an ECT(1) UDP burst that builds a queue (marked), a Not-ECT
// TCP flow and an ECT(0) UDP flow. Each is listed with its class, its
// bytes as sent, the bytes and the CE marks the receiver saw, and its
// drops (the Classic queue's PI may drop Not-ECT packets of the burst).
func TestFlowCountsThroughHop(t *testing.T) {
	h := startHop(t, testConfig(10_000_000, 0))
	// A reader polls the flow tables while the hop forwards: under the
	// race detector, the owner never writes what a reader reads.
	polling := make(chan struct{})
	pollDone := make(chan struct{})
	go func() {
		defer close(pollDone)
		for {
			select {
			case <-polling:
				return
			default:
				h.StatsFlows(2)
				time.Sleep(time.Millisecond)
			}
		}
	}()
	const n = 60
	sent := map[uint16]int{}
	for i := 0; i < n; i++ {
		for _, p := range [][]byte{pkt4(1000, aqm.ECT1, 17, 1), pkt4(500, aqm.NotECT, 6, 2), pkt4(300, aqm.ECT0, 17, 3)} {
			h.client.Inject(p)
			sent[binary.BigEndian.Uint16(p[20:])] += len(p)
		}
	}
	ce := map[uint16]uint64{}
	got := map[uint16]int{}
	var rx [][]byte
	deadline := time.Now().Add(10 * time.Second)
	for {
		s := h.Stats().Up
		if s.In == 3*n && s.Pending == 0 && len(rx) == int(s.Out) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("waited 10 s for the hop to forward or drop all %d packets: in %d, out %d (received %d), pending %d", 3*n, s.In, s.Out, len(rx), s.Pending)
		}
		select {
		case p := <-h.server.Outbound:
			rx = append(rx, p)
		case <-time.After(10 * time.Millisecond):
		}
	}
	final := h.Stats()
	drops := final.Up.Dropped()
	for _, p := range rx {
		port := binary.BigEndian.Uint16(p[20:])
		got[port] += len(p)
		if aqm.ECN(p[1]&3) == aqm.CE {
			ce[port]++
		}
	}
	close(polling)
	<-pollDone
	_, ft := h.StatsFlows(-1)
	if len(ft[Up].Flows) != 3 || len(ft[Down].Flows) != 0 {
		t.Fatalf("%d flows up, %d down; want 3, 0", len(ft[Up].Flows), len(ft[Down].Flows))
	}
	want := map[string]struct {
		class string
		queue string
	}{"10.254.1.2:1": {ClassL4S, "L"}, "10.254.1.2:2": {ClassNotECT, "C"}, "10.254.1.2:3": {ClassClassicECN, "C"}}
	var flowDrops uint64
	for _, f := range ft[Up].Flows {
		for _, d := range f.Drops {
			flowDrops += d
		}
		var port uint16
		fmt.Sscanf(f.Src, "10.254.1.2:%d", &port)
		w := want[f.Src]
		if f.Class != w.class || f.Queue != w.queue {
			t.Errorf("%s: class %q queue %q, want %q %q", f.Src, f.Class, f.Queue, w.class, w.queue)
		}
		if in, out := f.In.Total(), f.Out.Total(); in.Bytes != uint64(sent[port]) || out.Bytes != uint64(got[port]) || in.Packets != n {
			t.Errorf("%s: in %d B (%d pkt), out %d B; want %d (%d), %d", f.Src, in.Bytes, in.Packets, out.Bytes, sent[port], n, got[port])
		}
		if f.Marks != ce[port] || f.Out.CE.Packets != ce[port] {
			t.Errorf("%s: %d marks, %d CE out; the receiver saw %d CE", f.Src, f.Marks, f.Out.CE.Packets, ce[port])
		}
	}
	if flowDrops != drops {
		t.Errorf("flows' drops add up to %d, the direction dropped %d", flowDrops, drops)
	}
	if ce[1] == 0 {
		t.Errorf("no CE on the ECT(1) flow: the test's queue did not build")
	}
}

// The owner's data path allocates nothing with the flow table on, over
// many flows that come and go (evictions), and serving a flow table to a
// reader allocates nothing on the owner.
func TestFlowTableAllocatesNothing(t *testing.T) {
	if race.Enabled {
		t.Skip("allocation counts are meaningless under the race detector")
	}
	in, out := &flowsDevice{flows: 2 * FlowTableSize}, &nullDevice{}
	h, err := New(testConfig(100_000_000_000, 0), in, out)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	o := h.dirs[Up]
	step := func() {
		in.left = 64
		if _, err := o.readBatch(); err != nil {
			t.Fatal(err)
		}
		for t0 := time.Now(); time.Since(t0) < 20*time.Microsecond; {
		}
		o.release(clock())
	}
	step()
	if allocs := testing.AllocsPerRun(200, step); allocs != 0 {
		t.Errorf("%v allocations per batch of 64 packets, want 0", allocs)
	}
	if o.rep.flows.evicted == 0 {
		t.Errorf("no flow evicted after %d flows through a table of %d", 201*64, FlowTableSize)
	}
	o.rep.reqFlows = new(flowCopy)
	serve := func() {
		o.rep.statsReq.Store(true)
		o.rep.flowsReq.Store(true)
		o.publish(clock(), false)
		<-o.rep.published
	}
	serve()
	if allocs := testing.AllocsPerRun(20, serve); allocs != 0 {
		t.Errorf("%v allocations per flow table served, want 0", allocs)
	}
	used := 0
	for _, tg := range o.rep.flows.tags {
		if tg != 0 {
			used++
		}
	}
	// 8192 flows over 512 sets of 8: a set of fewer than 8 flows is rare.
	if o.rep.reqFlows.n != used || used < FlowTableSize*63/64 {
		t.Errorf("%d flows copied of %d in the table, want all, nearly %d", o.rep.reqFlows.n, used, FlowTableSize)
	}
}

// flowsDevice hands out 1500-byte ECT(1) UDP packets of flows distinct
// flows, each packet from the next flow in turn.
type flowsDevice struct {
	nullDevice
	flows, next int
	pkts        [][]byte
}

func (d *flowsDevice) TryRead(bufs [][]byte, sizes []int) (int, error) {
	if d.pkts == nil {
		for f := 0; f < d.flows; f++ {
			p := pkt4(1500, aqm.ECT1, 17, uint16(f))
			p[13] = byte(f >> 16) // beyond 65536 flows, another source
			d.pkts = append(d.pkts, p)
		}
	}
	n := min(len(bufs), d.left)
	for i := range n {
		sizes[i] = copy(bufs[i], d.pkts[d.next])
		d.next = (d.next + 1) % len(d.pkts)
	}
	d.left -= n
	return n, nil
}

// BenchmarkOwnerFlows is the owner's data path per packet (read, enqueue,
// release, write, on devices that cost nothing) with the flow table on
// and off, over 1 and 1000 flows: the difference is what per-flow
// accounting costs.
func BenchmarkOwnerFlows(b *testing.B) {
	for _, flows := range []int{1, 1000, 4096} {
		for _, on := range []bool{false, true} {
			b.Run(fmt.Sprintf("flows=%d/table=%v", flows, on), func(b *testing.B) {
				in, out := &flowsDevice{flows: flows}, &nullDevice{}
				cfg := testConfig(100_000_000_000, 0)
				cfg.NoFlows = !on
				h, err := New(cfg, in, out)
				if err != nil {
					b.Fatal(err)
				}
				defer h.Close()
				o := h.dirs[Up]
				b.ResetTimer()
				for done := 0; done < b.N; done += 64 {
					in.left = 64
					if _, err := o.readBatch(); err != nil {
						b.Fatal(err)
					}
					// Far enough ahead that the link has sent all 64.
					o.release(clock() + 100_000)
				}
			})
		}
	}
}

// BenchmarkFlowAccounting is what the flow table adds per packet, alone:
// the keyed hash beside MetaOf's, the lookup, the arrival and the release
// (with an L-queue packet's Queue Protection score), against MetaOf
// alone, over 1, 1000 and 4096 flows in turn.
func BenchmarkFlowAccounting(b *testing.B) {
	for _, flows := range []int{1, 1000, 4096} {
		d := &flowsDevice{flows: flows}
		d.TryRead(nil, nil)
		b.Run(fmt.Sprintf("flows=%d/table=false", flows), func(b *testing.B) {
			var sink uint32
			for i := 0; i < b.N; i++ {
				m := aqm.MetaOf(d.pkts[i%flows], 0)
				sink += m.Flow
			}
			_ = sink
		})
		b.Run(fmt.Sprintf("flows=%d/table=true", flows), func(b *testing.B) {
			tb := new(flowCounters)
			tb.reset(qprotScorer(testConfig(10_000_000, 0).Up))
			var sink uint32
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				p := d.pkts[i%flows]
				now := int64(i) * 1000
				m, h := aqm.MetaOfKeyed(p, 0, tb.key)
				m.Arrival = now
				fi := tb.lookup(p, h, now)
				tb.arrive(fi, m.ECN, len(p), now)
				tb.held(fi)
				tb.released(fi, &m, false, m.ECN, aqm.L4S, 500_000, now+500_000)
				sink += m.Flow
			}
			_ = sink
			b.ReportMetric(float64(tb.evicted)/float64(b.N), "evictions/op")
		})
	}
}

// BenchmarkRandomLine is the floor under per-flow accounting: one read of
// a random cache line of a table of flows, each read waiting for the one
// before (as a packet's lookup waits for its hash), in tables of the hot
// part's size (FlowTableSize entries of flowHotSize bytes) and of a whole
// entry's (hot, cold and the histogram), with and without the reads
// through 1.5 MB of packet buffers that the owner's copies do between two
// packets of a flow.
func BenchmarkRandomLine(b *testing.B) {
	for _, c := range []struct {
		name  string
		entry int
	}{{"hot", flowHotSize}, {"whole", flowHotSize + int(unsafe.Sizeof(flowCold{}))}} {
		for _, stream := range []bool{false, true} {
			b.Run(fmt.Sprintf("table=%s/%dKiB/packets=%v", c.name, FlowTableSize*c.entry>>10, stream), func(b *testing.B) {
				mem := make([]uint64, FlowTableSize*c.entry/8)
				words := c.entry / 8
				// A random cycle through every entry: each entry's first
				// word holds the next entry's index.
				order := rand.New(rand.NewPCG(1, 2)).Perm(FlowTableSize)
				for k, e := range order {
					mem[e*words] = uint64(order[(k+1)%len(order)])
				}
				pkts := make([]byte, 1000*1500)
				var sink byte
				e := uint64(order[0])
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					e = mem[int(e)*words]
					if stream {
						// One packet's worth of the buffers, read a line at a time.
						off := (i % 1000) * 1500
						for j := off; j < off+1500; j += 64 {
							sink += pkts[j]
						}
					}
				}
				_, _ = e, sink
			})
		}
	}
}

// A hot entry is a whole number of cache lines and the table, allocated
// as the owner allocates it, starts on a line: no entry straddles more
// lines than it fills.
func TestFlowHotLines(t *testing.T) {
	if n := unsafe.Sizeof(flowHot{}); n != flowHotSize || n%64 != 0 {
		t.Errorf("flowHot is %d bytes, want flowHotSize (%d), a multiple of 64", n, flowHotSize)
	}
	tb := &flowCounters{}
	if a := uintptr(unsafe.Pointer(&tb.hot[0])); a%64 != 0 {
		t.Errorf("the table's first hot entry at %#x, not on a 64-byte line", a)
	}
}
