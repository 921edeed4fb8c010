package hop

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/internal/race"
	"github.com/pi2hop/pi2hop/pcap/pcaptest"
	"github.com/pi2hop/pi2hop/rtt"
	"github.com/pi2hop/pi2hop/shaper"
)

var (
	rttCli = netip.MustParseAddr("10.254.1.2")
	rttSrv = netip.MustParseAddr("10.254.2.2")
)

// icmp4 builds an ICMP echo request (typ 8) or reply (0) from src to dst.
func icmp4(src, dst netip.Addr, typ uint8, id, seq uint16) []byte {
	p := make([]byte, 28)
	p[0], p[8], p[9] = 0x45, 64, 1
	binary.BigEndian.PutUint16(p[2:], 28)
	copy(p[12:16], src.AsSlice())
	copy(p[16:20], dst.AsSlice())
	binary.BigEndian.PutUint16(p[10:], pcaptest.IPv4Checksum(p[:20]))
	p[20] = typ
	binary.BigEndian.PutUint16(p[24:], id)
	binary.BigEndian.PutUint16(p[26:], seq)
	return p
}

// tcpTS builds a TCP packet with timestamps, from the client (up) or the
// server.
func tcpTS(up bool, payload int, seq, tsval, tsecr uint32) []byte {
	p := pcaptest.Packet{Src: rttCli, Dst: rttSrv, Proto: 6, SPort: 40000, DPort: 5201, Payload: payload, Seq: seq,
		Flags: pcaptest.TCPAck, TS: true, TSval: tsval, TSecr: tsecr, ECN: aqm.ECT1}
	if !up {
		p.Src, p.Dst, p.SPort, p.DPort = p.Dst, p.Src, p.DPort, p.SPort
	}
	return p.Build()
}

// The ring hands items over in the order written, and a full ring
// refuses the next one and counts it; a drain takes only what arrived by
// its time.
func TestRTTRing(t *testing.T) {
	d, u, err := newRTT(new(waker))
	if err != nil {
		t.Fatal(err)
	}
	u.wake = nil // no owner to wake: the ring is never filled to half by arrive here
	r := d.ring
	// Half full: the consumer is told, once, each time; here after a
	// drain of all, the second time without the producer having found the
	// ring full in between.
	for round := range 2 {
		var halves []int
		for i := range rttRingSize / 2 {
			r.slot()
			if r.publish() {
				halves = append(halves, i+1)
			}
		}
		if len(halves) != 1 || halves[0] != rttRingSize/2 {
			t.Errorf("round %d: publish said half full after items %v, want after %d only", round, halves, rttRingSize/2)
		}
		r.drain(1<<62, func(*rttItem) {})
	}
	for i := range rttRingSize {
		it := r.slot()
		if it == nil {
			t.Fatalf("ring full after %d items, want room for %d", i, rttRingSize)
		}
		it.at = int64(i)
		r.publish()
	}
	if r.slot() != nil || r.drops.Load() != 1 {
		t.Fatalf("a full ring took an item (%d refused), want it refused and counted", r.drops.Load())
	}
	next := int64(0)
	r.drain(rttRingSize/2-1, func(it *rttItem) {
		if it.at != next {
			t.Fatalf("item %d: got at=%d", next, it.at)
		}
		next++
	})
	if next != rttRingSize/2 {
		t.Fatalf("a drain at %d took %d items, want those at 0..%[1]d", rttRingSize/2-1, next)
	}
	if r.slot() == nil {
		t.Fatal("a ring drained by half refused an item")
	}
	r.drain(1<<62, func(it *rttItem) {
		if it.at != next {
			t.Fatalf("item %d: got at=%d", next, it.at)
		}
		next++
	})
	if next != rttRingSize {
		t.Fatalf("drained %d items in all, want %d", next, rttRingSize)
	}
	r.drain(1<<62, func(*rttItem) { t.Fatal("an empty ring gave an item") })
	// Ten echo requests 1 ms apart; a drain at 4.5 ms takes the first five.
	req := icmp4(rttCli, rttSrv, 8, 7, 0)
	for i := range 10 {
		binary.BigEndian.PutUint16(req[26:], uint16(i))
		it := r.slot()
		it.rec.Parse(req, len(req), rtt.Up)
		it.at = int64(i+1) * 1e6
		r.publish()
	}
	d.drain(5_500_000)
	if got := d.t.Stats().Packets; got != 5 {
		t.Errorf("a drain at 5.5 ms showed the table %d packets, want the 5 that arrived by then", got)
	}
	// The reply to request 6 (at 7 ms) leaves for the client at 7.25 ms,
	// the link's time for it, though the owner writes it at 7.4 ms: its
	// depart drains requests 6 and 7 first, so the sample is 0.25 ms.
	rep := icmp4(rttSrv, rttCli, 0, 7, 6)
	d.depart(0, rep, &shaper.Event{At: 7_250_000}, true, 7_400_000)
	s := d.stats()
	if s.Packets != 8 || s.Samples != 1 || s.Dropped != 1 {
		t.Errorf("stats %+v, want 8 packets, 1 sample, the ring's 1 drop", s)
	}
	snap := rtt.NewSnapshot(d.t)
	d.t.CopyTo(snap, 8e6)
	fs := snap.Flows()
	if len(fs) != 1 || fs[0].ServerHalf.N != 1 || fs[0].ServerHalf.MaxMs != 0.25 {
		t.Errorf("flows %+v, want one ICMP flow with one server-half sample of 0.25 ms", fs)
	}
}

// The join: each direction's flow gets the RTT flow of its 5-tuple, the
// down one reversed; ICMP flows of every echo identifier between two
// hosts join the flow table's one ICMP flow of those hosts.
func TestRTTJoin(t *testing.T) {
	tb, err := rtt.NewTable(rtt.DefaultConfig)
	if err != nil {
		t.Fatal(err)
	}
	ms := int64(1e6)
	// TCP: client half 3 ms, server half 20 ms, ten round trips.
	for i := range 10 {
		t0 := int64(i) * 100 * ms
		v := uint32(1000 + 10*i)
		tb.Packet(tcpTS(true, 1000, uint32(1000*i), v, v-1), rtt.Up, t0)
		tb.Packet(tcpTS(false, 0, 0, v+1, v), rtt.Down, t0+20*ms)
		tb.Packet(tcpTS(true, 0, uint32(1000*i+1000), v+2, v+1), rtt.Up, t0+23*ms)
	}
	// ICMP: two identifiers, 10 ms server half each, 1 ms client half
	// never timed (the hop sees no request from the server).
	for id := uint16(1); id <= 2; id++ {
		for seq := range uint16(5) {
			t0 := int64(id)*1000*ms + int64(seq)*10*ms
			tb.Packet(icmp4(rttCli, rttSrv, 8, id, seq), rtt.Up, t0)
			tb.Packet(icmp4(rttSrv, rttCli, 0, id, seq), rtt.Down, t0+10*ms)
		}
	}
	snap := rtt.NewSnapshot(tb)
	tb.CopyTo(snap, 3000*ms)
	j := &rttJoin{index: map[rttKey]*rttJoined{}}
	j.fill(snap, tb.Stats())

	tcpUp := keyOf(aqm.Header(tcpTS(true, 0, 0, 1, 1)), 4)
	tcpDown := keyOf(aqm.Header(tcpTS(false, 0, 0, 1, 1)), 4)
	for _, c := range []struct {
		name string
		d    Dir
		k    flowKey
	}{{"tcp up", Up, tcpUp}, {"tcp down", Down, tcpDown}} {
		f := j.flowRTT(c.d, &c.k)
		if f == nil {
			t.Fatalf("%s: no RTT joined", c.name)
		}
		if f.Method != "tcp-timestamps" || f.Status != rtt.StatusMeasured.String() ||
			f.ServerHalf.N != 10 || f.ClientHalf.N != 10 || !near(f.ServerHalf.P50Ms, 20) || !near(f.ClientHalf.P50Ms, 3) || !near(f.Sum.P50Ms, 23) {
			t.Errorf("%s: %+v, want timestamps, 10 samples each half, 3 + 20 = 23 ms", c.name, f)
		}
	}
	// The flow table's ICMP flow has no ports.
	icmpUp := keyOf(aqm.Header(icmp4(rttCli, rttSrv, 8, 1, 0)), 4)
	icmpDown := keyOf(aqm.Header(icmp4(rttSrv, rttCli, 0, 2, 0)), 4)
	if icmpUp.ports != 0 {
		t.Fatalf("the flow table keeps ICMP ports %#x, the join assumes none", icmpUp.ports)
	}
	for _, k := range []flowKey{icmpUp, icmpDown} {
		f := j.flowRTT(Dir(map[bool]int{true: 0, false: 1}[k == icmpUp]), &k)
		if f == nil || f.Method != "icmp-echo" || f.ServerHalf.N != 10 || !near(f.ServerHalf.P50Ms, 10) || f.ClientHalf.N != 0 || f.Sum.N != 0 {
			t.Errorf("icmp: %+v, want both identifiers' 10 server-half samples of 10 ms, no client half, no sum", f)
		}
	}
	// Another host pair, or the up key looked up as down, joins nothing.
	other := keyOf(aqm.Header(icmp4(rttCli, netip.MustParseAddr("10.254.3.3"), 8, 1, 0)), 4)
	if f := j.flowRTT(Up, &other); f != nil {
		t.Errorf("a flow of other hosts got %+v", f)
	}
	if f := j.flowRTT(Down, &tcpUp); f != nil {
		t.Errorf("the up TCP key taken as down got %+v", f)
	}
	var nilJoin *rttJoin
	if nilJoin.flowRTT(Up, &tcpUp) != nil {
		t.Error("no join gave an RTT")
	}
}

// near: within the histogram's 0.8 %.
func near(got, want float64) bool { return got > want*0.99 && got < want*1.01 }

// echoDevice hands out ICMP echo packets, a new sequence number each:
// requests from the client, or replies from the server.
type echoDevice struct {
	nullDevice
	reply bool
	seq   uint16
}

func (d *echoDevice) TryRead(bufs [][]byte, sizes []int) (int, error) {
	if d.pkt == nil {
		if d.reply {
			d.pkt = icmp4(rttSrv, rttCli, 0, 9, 0)
		} else {
			d.pkt = icmp4(rttCli, rttSrv, 8, 9, 0)
		}
	}
	n := min(len(bufs), d.left)
	for i := range n {
		binary.BigEndian.PutUint16(d.pkt[26:], d.seq)
		d.seq++
		sizes[i] = copy(bufs[i], d.pkt)
	}
	d.left -= n
	return n, nil
}

// The owners' data paths allocate nothing with the RTT table on: the up
// owner's records over the ring, the down owner's drain and samples; and
// serving the table's copy allocates nothing on the owner.
func TestRTTAllocatesNothing(t *testing.T) {
	if race.Enabled {
		t.Skip("allocation counts are meaningless under the race detector")
	}
	req, rep := &echoDevice{}, &echoDevice{reply: true}
	h, err := New(testConfig(100_000_000_000, 0), req, rep)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	up, down := h.dirs[Up], h.dirs[Down]
	step := func() {
		req.left, rep.left = 64, 64
		if _, err := up.readBatch(); err != nil {
			t.Fatal(err)
		}
		if _, err := down.readBatch(); err != nil {
			t.Fatal(err)
		}
		for t0 := time.Now(); time.Since(t0) < 20*time.Microsecond; {
		}
		up.release(clock())
		down.release(clock())
	}
	step()
	if allocs := testing.AllocsPerRun(200, step); allocs != 0 {
		t.Errorf("%v allocations per batch of 64 packets each way, want 0", allocs)
	}
	down.rep.reqRTT = rtt.NewSnapshot(down.rep.rtt.t)
	serve := func() {
		down.rep.statsReq.Store(true)
		down.rep.rttReq.Store(true)
		down.publish(clock(), false)
		<-down.rep.published
	}
	serve()
	if allocs := testing.AllocsPerRun(20, serve); allocs != 0 {
		t.Errorf("%v allocations per RTT table served, want 0", allocs)
	}
	s := down.rep.reqRTTStats
	if s.Samples < 201*64 || s.Packets != 2*s.Samples || s.Dropped != 0 {
		t.Errorf("RTT stats %+v: want every packet of both ways seen, a sample per reply, none dropped", s)
	}
}

// BenchmarkOwnerRTT is the owners' data paths per packet (read, enqueue,
// release, write, on devices that cost nothing) with the RTT table on and
// off: a TCP bulk flow's data segments one way and its ACKs the other,
// all with timestamps, a new TSval every packet. The difference is what
// passive RTT costs a TCP packet.
func BenchmarkOwnerRTT(b *testing.B) {
	for _, on := range []bool{false, true} {
		b.Run(fmt.Sprintf("rtt=%v", on), func(b *testing.B) {
			var samples uint64
			data, acks := &tsDevice{up: true, payload: 1448}, &tsDevice{}
			cfg := testConfig(100_000_000_000, 0)
			cfg.NoRTT = !on
			h, err := New(cfg, data, acks)
			if err != nil {
				b.Fatal(err)
			}
			defer h.Close()
			up, down := h.dirs[Up], h.dirs[Down]
			b.ResetTimer()
			cpu0 := pcaptest.CPUTime()
			for done := 0; done < b.N; done += 128 {
				data.left, acks.left = 64, 64
				if _, err := up.readBatch(); err != nil {
					b.Fatal(err)
				}
				if _, err := down.readBatch(); err != nil {
					b.Fatal(err)
				}
				up.release(clock() + 100_000)
				down.release(clock() + 100_000)
			}
			b.StopTimer()
			b.ReportMetric(float64(pcaptest.CPUTime()-cpu0)/float64(b.N), "cpu-ns/op")
			if on {
				down.rep.rtt.drain(clock())
				samples = down.rep.rtt.t.Stats().Samples
				b.ReportMetric(float64(samples)/float64(b.N), "samples/packet")
			}
		})
	}
}

// tsDevice hands out a TCP flow's packets with timestamps: data segments
// from the client (up), or the server's ACKs echoing them.
type tsDevice struct {
	nullDevice
	up      bool
	payload int
	ts      uint32
}

func (d *tsDevice) TryRead(bufs [][]byte, sizes []int) (int, error) {
	if d.pkt == nil {
		d.pkt = tcpTS(d.up, d.payload, 0, 0, 0)
	}
	n := min(len(bufs), d.left)
	opt := len(d.pkt) - d.payload - 8 // TSval, then TSecr
	for i := range n {
		d.ts++
		binary.BigEndian.PutUint32(d.pkt[opt:], d.ts)
		if d.up { // new data: the next segment
			binary.BigEndian.PutUint32(d.pkt[24:], d.ts*uint32(d.payload))
		} else { // the ACK of the data segment of the same number, echoing its TSval
			binary.BigEndian.PutUint32(d.pkt[opt+4:], d.ts)
			binary.BigEndian.PutUint32(d.pkt[28:], (d.ts+1)*1448)
		}
		sizes[i] = copy(bufs[i], d.pkt)
	}
	d.left -= n
	return n, nil
}

// Through a running hop with 5 ms of delay up: echo requests answered at
// once on the server side give server-half samples of the up delay, shown
// on the up and the down flow of the flow tables, with the table's
// counters, and in RTTFlows with histograms of the caller's own.
func TestRTTThroughHop(t *testing.T) {
	cfg := testConfig(100_000_000, 0)
	cfg.Up.Link.Delay = int64(5 * time.Millisecond)
	h := startHop(t, cfg)
	const n = 20
	ping := func(seq uint16) {
		h.client.Inject(icmp4(rttCli, rttSrv, 8, 77, seq))
		req := receive(t, h.server.Outbound, 1, 5*time.Second)[0]
		h.server.Inject(icmp4(rttSrv, rttCli, 0, 77, binary.BigEndian.Uint16(req[26:])))
		receive(t, h.client.Outbound, 1, 5*time.Second)
	}
	for seq := range uint16(n) {
		ping(seq)
	}
	_, ft := h.StatsFlows(-1)
	for d, tb := range ft {
		if tb.RTT == nil || tb.RTT.Samples != n || tb.RTT.Packets != 2*n {
			t.Errorf("%s: RTT counters %+v, want %d packets, %d samples", Dir(d), tb.RTT, 2*n, n)
		}
		if len(tb.Flows) != 1 || tb.Flows[0].RTT == nil {
			t.Fatalf("%s: flows %+v, want one with its RTT", Dir(d), tb.Flows)
		}
		r := tb.Flows[0].RTT
		// The server half: the up delay, plus the hop's and the test's own
		// turnaround (a loaded test machine's: up to 20 ms more).
		if r.Method != "icmp-echo" || r.ServerHalf.N != n || r.ServerHalf.P50Ms < 5 || r.ServerHalf.P50Ms > 25 || r.ClientHalf.N != 0 {
			t.Errorf("%s: %+v, want %d server-half samples of 5 ms and more", Dir(d), r, n)
		}
	}
	fs := h.RTTFlows(func(f *rtt.Flow) bool { return f.Proto == 1 })
	if len(fs) != 1 || fs[0].Client.Port() != 77 || fs[0].Hists == nil || fs[0].Hists[rtt.ServerHalf].N != n {
		t.Fatalf("RTTFlows: %+v, want the echo flow of id 77 with its %d samples", fs, n)
	}
	hist := fs[0].Hists
	if none := h.RTTFlows(func(*rtt.Flow) bool { return false }); len(none) != 0 {
		t.Errorf("RTTFlows kept %d flows its filter refused", len(none))
	}
	ping(n)
	if fs := h.RTTFlows(nil); len(fs) != 1 || fs[0].Hists[rtt.ServerHalf].N != n+1 || hist[rtt.ServerHalf].N != n {
		t.Errorf("after one more ping: %d samples, and the first copy's histogram %d, want %d and still %d",
			fs[0].Hists[rtt.ServerHalf].N, hist[rtt.ServerHalf].N, n+1, n)
	}
	cfg.NoRTT = true
	off := startHop(t, cfg)
	if _, ft := off.StatsFlows(-1); ft[0].RTT != nil || off.RTTFlows(nil) != nil {
		t.Errorf("with NoRTT: counters %+v, want none", ft[0].RTT)
	}
}
