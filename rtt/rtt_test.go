package rtt

import (
	"math/rand/v2"
	"slices"
	"testing"
)

const ms = int64(1_000_000)

// step is one packet crossing the hop at a time in ms.
type step struct {
	at int64 // ms
	d  Dir
	p  pkt
}

// samples are the expected samples of each half, ms.
type samples struct{ client, server []int64 }

func tcpTS(flags byte, seq, ack uint32, payload int, tsval, tsecr uint32) pkt {
	return pkt{proto: 6, sport: 40000, dport: 443, flags: flags, seq: seq, ack: ack, payload: payload, ts: true, tsval: tsval, tsecr: tsecr}
}

func tcpSeq(flags byte, seq, ack uint32, payload int) pkt {
	return pkt{proto: 6, sport: 40000, dport: 80, flags: flags, seq: seq, ack: ack, payload: payload}
}

const (
	syn    = tcpSYN
	ackf   = tcpACK
	synack = tcpSYN | tcpACK
)

func v6(p pkt) pkt { p.v6 = true; return p }

// offerTS gives p the timestamps option with TSval v.
func offerTS(p pkt, v uint32) pkt { p.ts, p.tsval = true, v; return p }

// run feeds steps to a fresh table and returns the samples, ms.
func run(t *testing.T, cfg Config, steps []step) (*Table, *samples) {
	t.Helper()
	tb, err := NewTable(cfg)
	if err != nil {
		t.Fatal(err)
	}
	got := new(samples)
	tb.onSample = func(h Half, ns int64) {
		if ns%ms != 0 {
			t.Errorf("sample %d ns is not whole ms", ns)
		}
		if h == ClientHalf {
			got.client = append(got.client, ns/ms)
		} else {
			got.server = append(got.server, ns/ms)
		}
	}
	for _, s := range steps {
		tb.Packet(s.p.build(s.d), s.d, s.at*ms)
	}
	return tb, got
}

func TestTCPTimestamps(t *testing.T) {
	for _, tc := range []struct {
		name  string
		steps []step
		want  samples
	}{
		{"handshake and data both halves", []step{
			{0, Up, tcpTS(syn, 1000, 0, 0, 100, 0)},
			{10, Down, tcpTS(synack, 5000, 1001, 0, 900, 100)}, // server half 10
			{12, Up, tcpTS(ackf, 1001, 5001, 0, 102, 900)},     // client half 2
		}, samples{client: []int64{2}, server: []int64{10}}},
		{"repeated TSval: the first packet times it", []step{
			{0, Up, tcpTS(ackf, 1000, 1, 100, 100, 7)},
			{3, Up, tcpTS(ackf, 1100, 1, 100, 100, 7)}, // same TSval, later
			{10, Down, tcpTS(ackf, 1, 1200, 0, 900, 100)},
		}, samples{server: []int64{10}}},
		{"duplicate echo: only the first counts", []step{
			{0, Up, tcpTS(ackf, 1000, 1, 100, 100, 7)},
			{10, Down, tcpTS(ackf, 1, 1100, 0, 900, 100)},
			{11, Down, tcpTS(ackf, 1, 1100, 0, 901, 100)},
			{12, Down, tcpTS(ackf, 1, 1100, 0, 902, 100)},
		}, samples{server: []int64{10}}},
		{"an echo of an older TSval than the last remembered is no sample", []step{
			{0, Up, tcpTS(ackf, 1000, 1, 100, 100, 7)},
			{5, Up, tcpTS(ackf, 1100, 1, 100, 105, 7)},
			{10, Down, tcpTS(ackf, 1, 1200, 0, 900, 105)}, // 100 is never echoed: dropped
			{11, Down, tcpTS(ackf, 1, 1200, 0, 901, 100)}, // reordered echo
		}, samples{server: []int64{5}}},
		{"retransmission: its TSval is not remembered, the ACK covering it gives none", []step{
			{0, Up, tcpTS(ackf, 1000, 1, 100, 100, 7)},
			{1, Up, tcpTS(ackf, 1100, 1, 100, 101, 7)},
			{30, Up, tcpTS(ackf, 1000, 1, 100, 130, 7)},   // 1000-1100 sent again
			{35, Down, tcpTS(ackf, 1, 1000, 0, 900, 7)},   // dup ACK, echoes nothing remembered
			{40, Down, tcpTS(ackf, 1, 1200, 0, 901, 101)}, // covers the retransmission: Karn
			{41, Up, tcpTS(ackf, 1200, 1, 100, 141, 901)}, // client half 1
			{50, Down, tcpTS(ackf, 1, 1300, 0, 902, 141)}, // all retransmitted data acked: counts
		}, samples{client: []int64{1}, server: []int64{9}}},
		{"IPv6", []step{
			{0, Up, v6(tcpTS(syn, 1000, 0, 0, 100, 0))},
			{7, Down, v6(tcpTS(synack, 5000, 1001, 0, 900, 100))},
			{10, Up, v6(tcpTS(ackf, 1001, 5001, 0, 102, 900))},
		}, samples{client: []int64{3}, server: []int64{7}}},
		{"TSval wraps", []step{
			{0, Up, tcpTS(ackf, 1000, 1, 100, 0xffffffff, 7)},
			{1, Up, tcpTS(ackf, 1100, 1, 100, 2, 7)},
			{10, Down, tcpTS(ackf, 1, 1100, 0, 900, 0xffffffff)},
			{11, Down, tcpTS(ackf, 1, 1200, 0, 901, 2)},
		}, samples{server: []int64{10, 10}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tb, got := run(t, DefaultConfig, tc.steps)
			check(t, *got, tc.want)
			fs := snap(tb).Flows()
			if len(fs) != 1 || fs[0].Method != MethodTCPTimestamps {
				t.Fatalf("flows %+v, want one timed by timestamps", fs)
			}
		})
	}
}

func TestTCPKarn(t *testing.T) {
	for _, tc := range []struct {
		name  string
		steps []step
		want  samples
	}{
		{"handshake, data, ACK", []step{
			{0, Up, tcpSeq(syn, 999, 0, 0)},
			{10, Down, tcpSeq(synack, 4999, 1000, 0)}, // server half 10
			{13, Up, tcpSeq(ackf, 1000, 5000, 0)},     // client half 3
			{14, Up, tcpSeq(ackf, 1000, 5000, 100)},
			{24, Down, tcpSeq(ackf, 5000, 1100, 0)}, // 10
		}, samples{client: []int64{3}, server: []int64{10, 10}}},
		{"timestamps offered by the SYN, declined by the SYN-ACK", []step{
			{0, Up, offerTS(tcpSeq(syn, 999, 0, 0), 100)},
			{10, Down, tcpSeq(synack, 4999, 1000, 0)}, // the TSval waiting is forgotten: no sample
			{13, Up, tcpSeq(ackf, 1000, 5000, 0)},     // client half 3
			{14, Up, tcpSeq(ackf, 1000, 5000, 100)},
			{24, Down, tcpSeq(ackf, 5000, 1100, 0)}, // 10
		}, samples{client: []int64{3}, server: []int64{10}}},
		{"cumulative ACK times the last segment it covers", []step{
			{0, Up, tcpSeq(ackf, 1000, 1, 100)},
			{2, Up, tcpSeq(ackf, 1100, 1, 100)},
			{12, Down, tcpSeq(ackf, 1, 1200, 0)},
			{13, Down, tcpSeq(ackf, 1, 1200, 0)}, // duplicate
		}, samples{server: []int64{10}}},
		{"retransmitted range gives no sample", []step{
			{0, Up, tcpSeq(ackf, 1000, 1, 100)},
			{10, Down, tcpSeq(ackf, 1, 1100, 0)}, // 10
			{20, Up, tcpSeq(ackf, 1100, 1, 100)},
			{21, Up, tcpSeq(ackf, 1200, 1, 100)},
			{30, Up, tcpSeq(ackf, 1100, 1, 100)}, // retransmission
			{40, Down, tcpSeq(ackf, 1, 1300, 0)}, // covers it: none
			{50, Up, tcpSeq(ackf, 1300, 1, 100)}, // new data
			{58, Down, tcpSeq(ackf, 1, 1400, 0)}, // 8
		}, samples{server: []int64{10, 8}}},
		{"partial ACK of a retransmitted range", []step{
			{0, Up, tcpSeq(ackf, 1000, 1, 100)},
			{1, Up, tcpSeq(ackf, 1100, 1, 100)},
			{20, Up, tcpSeq(ackf, 1000, 1, 200)}, // both again
			{30, Down, tcpSeq(ackf, 1, 1100, 0)}, // partial: none
			{31, Down, tcpSeq(ackf, 1, 1200, 0)}, // rest: none
			{40, Up, tcpSeq(ackf, 1200, 1, 100)},
			{45, Down, tcpSeq(ackf, 1, 1300, 0)}, // 5
		}, samples{server: []int64{5}}},
		{"both ways, IPv6", []step{
			{0, Down, v6(tcpSeq(ackf, 7000, 1000, 100))},
			{4, Up, v6(tcpSeq(ackf, 1000, 7100, 0))}, // client half 4
			{5, Up, v6(tcpSeq(ackf, 1000, 7100, 50))},
			{11, Down, v6(tcpSeq(ackf, 7100, 1050, 0))}, // server half 6
		}, samples{client: []int64{4}, server: []int64{6}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tb, got := run(t, DefaultConfig, tc.steps)
			check(t, *got, tc.want)
			if fs := snap(tb).Flows(); len(fs) != 1 || fs[0].Method != MethodTCPSeq {
				t.Fatalf("flows %+v, want one timed by sequence numbers", fs)
			}
		})
	}
}

// quic returns a QUIC packet: a long header (Initial) or a short header
// with spin bit spin.
func quic(long bool, spin bool) pkt {
	b := []byte{0x40, 1, 2, 3, 4, 5, 6, 7, 8}
	switch {
	case long: // an Initial of QUIC version 1
		b = []byte{0xc0, 0, 0, 0, 1, 8, 1, 2, 3, 4, 5, 6, 7, 8}
	case spin:
		b[0] |= 0x20
	}
	return pkt{proto: 17, sport: 50000, dport: 443, udp: b}
}

// spinning is a QUIC flow whose endpoints spin, rounds round trips of a
// 10 ms server half and a 3 ms client half after the handshake; reorder
// lists the rounds in which a packet from before the client's edge
// arrives after it, and one from before the server's edge after that.
func spinning(rounds int, reorder ...int) []step {
	steps := []step{{0, Up, quic(true, false)}, {1, Down, quic(true, false)}, {2, Up, quic(false, false)}, {3, Down, quic(false, false)}}
	v, at := false, int64(10)
	for r := range rounds {
		v = !v
		steps = append(steps, step{at, Up, quic(false, v)}, step{at + 1, Up, quic(false, v)})
		if slices.Contains(reorder, r) {
			steps = append(steps, step{at + 2, Up, quic(false, !v)})
		}
		steps = append(steps, step{at + 10, Down, quic(false, v)})
		if slices.Contains(reorder, r) {
			steps = append(steps, step{at + 11, Down, quic(false, !v)})
		}
		steps = append(steps, step{at + 12, Down, quic(false, v)})
		at += 13
	}
	return steps
}

// repeat returns n copies of v.
func repeat(v int64, n int) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = v
	}
	return out
}

func TestQUICSpin(t *testing.T) {
	for _, tc := range []struct {
		name   string
		steps  []step
		want   samples
		status Status
	}{
		// Edges count from the first round: up and down, two a round.
		// The 32nd (spinTrust), the server edge of the sixteenth round trip,
		// is the first timed.
		{"spinning", spinning(24), samples{client: repeat(3, 24-16), server: repeat(10, 24-15)}, StatusMeasured},
		{"reordered packets from before an edge are no edges", spinning(24, 4, 20),
			samples{client: repeat(3, 24-16), server: repeat(10, 24-15)}, StatusMeasured},
		{"too few edges to trust", spinning(15), samples{}, StatusWaiting},
		{"short headers without a long header first are not QUIC", spinning(24)[2:], samples{}, StatusWaiting},
		{"a long header of no QUIC version is not QUIC", append([]step{
			{0, Up, pkt{proto: 17, sport: 50000, dport: 443, udp: []byte{0xc0, 0x12, 0x01, 0x00, 0x00, 0x01, 0, 0, 0}}},
		}, spinning(24)[2:]...), samples{}, StatusWaiting},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tb, got := run(t, DefaultConfig, tc.steps)
			check(t, *got, tc.want)
			for _, f := range snap(tb).Flows() {
				if f.Status != tc.status {
					t.Errorf("status %v, want %v", f.Status, tc.status)
				}
			}
		})
	}
}

// TestQUICRandomSpin: endpoints that do not spin may set the bit at
// random per packet (RFC 9000 §17.4); its changes are no round trips.
func TestQUICRandomSpin(t *testing.T) {
	for seed := range uint64(200) {
		for _, alternate := range []bool{true, false} {
			steps := []step{{0, Up, quic(true, false)}, {1, Down, quic(true, false)}}
			rng := rand.New(rand.NewPCG(seed, 2))
			for i := range 400 {
				d := Dir(i % 2)
				if !alternate { // bursts of 1 to 8 packets each way
					d = Dir(i / (1 + int(seed%8)) % 2)
				}
				steps = append(steps, step{int64(2 + i), d, quic(false, rng.IntN(2) == 1)})
			}
			tb, got := run(t, Config{Flows: 16, Outstanding: 8}, steps)
			if len(got.client)+len(got.server) > 0 {
				t.Errorf("seed %d, alternate %v: samples %+v from random spin bits", seed, alternate, *got)
			}
			if f := snap(tb).Flows()[0]; f.Status != StatusNoSpin {
				t.Errorf("seed %d, alternate %v: status %q, want no spin", seed, alternate, f.Status)
			}
		}
	}
}

func TestQUICNoSpin(t *testing.T) {
	steps := []step{{0, Up, quic(true, false)}, {1, Down, quic(true, false)}}
	for i := range noSpinAfter {
		steps = append(steps, step{int64(2 + 2*i), Up, quic(false, false)}, step{int64(3 + 2*i), Down, quic(false, false)})
	}
	tb, got := run(t, DefaultConfig, steps[:len(steps)-1])
	check(t, *got, samples{})
	if f := snap(tb).Flows()[0]; f.Status != StatusWaiting || f.Method != MethodQUICSpin {
		t.Fatalf("one packet short: %v %v, want waiting quic-spin", f.Method, f.Status)
	}
	tb, _ = run(t, DefaultConfig, steps)
	f := snap(tb).Flows()[0]
	if f.Status != StatusNoSpin || f.Status.String() != "no RTT: encrypted, no spin bit" {
		t.Fatalf("status %q, want no spin", f.Status)
	}
}

func icmp(v6 bool, typ byte, id, seq uint16) pkt {
	p := pkt{proto: protoICMP, icmpType: typ, id: id, icmpSeq: seq, udp: make([]byte, 56), v6: v6}
	if v6 {
		p.proto = protoICMPv6
	}
	return p
}

func TestEcho(t *testing.T) {
	probe := func(typ byte, seq uint32) pkt {
		b := make([]byte, 64)
		b[0] = typ
		be.PutUint32(b[2:], seq)
		return pkt{proto: 17, sport: 40001, dport: 9000, udp: b}
	}
	data := func(seq uint32) pkt {
		b := make([]byte, 1200)
		b[0] = pragueData
		be.PutUint32(b[pragueSeqAt:], seq)
		return pkt{proto: 17, sport: 40002, dport: 8080, udp: b}
	}
	ack := func(seq uint32) pkt {
		b := make([]byte, 39)
		b[0] = pragueACK
		be.PutUint32(b[pragueAckAt:], seq)
		return pkt{proto: 17, sport: 40002, dport: 8080, udp: b}
	}
	for _, tc := range []struct {
		name   string
		steps  []step
		want   samples
		method Method
	}{
		{"ICMP: the client pings", []step{
			{0, Up, icmp(false, icmpEchoRequest, 7, 1)},
			{20, Down, icmp(false, icmpEchoReply, 7, 1)},
			{21, Down, icmp(false, icmpEchoReply, 7, 1)}, // duplicate reply
			{30, Up, icmp(false, icmpEchoRequest, 7, 2)},
			{31, Up, icmp(false, icmpEchoRequest, 7, 3)},
			{52, Down, icmp(false, icmpEchoReply, 7, 3)}, // 2 lost
		}, samples{server: []int64{20, 21}}, MethodICMPEcho},
		{"ICMP sequence numbers wrap, a request lost before", []step{
			{0, Up, icmp(false, icmpEchoRequest, 7, 65535)}, // never answered
			{10, Up, icmp(false, icmpEchoRequest, 7, 0)},
			{14, Down, icmp(false, icmpEchoReply, 7, 0)},
			{20, Up, icmp(false, icmpEchoRequest, 7, 1)},
			{25, Down, icmp(false, icmpEchoReply, 7, 1)},
		}, samples{server: []int64{4, 5}}, MethodICMPEcho},
		{"ICMPv6: the server pings", []step{
			{0, Down, icmp(true, icmpv6EchoRequest, 9, 1)},
			{4, Up, icmp(true, icmpv6EchoReply, 9, 1)},
			{5, Up, icmp(true, icmpv6EchoReply, 8, 1)}, // another identifier
		}, samples{client: []int64{4}}, MethodICMPEcho},
		{"ICMP types that are not echo", []step{
			{0, Up, icmp(false, 3, 0, 0)},
		}, samples{}, MethodNone},
		{"probe", []step{
			{0, Up, probe(probeRequest, 1)},
			{0, Up, probe(probeRequest, 2)},
			{12, Down, probe(probeReply, 2)},
		}, samples{server: []int64{12}}, MethodProbe},
		{"prague", []step{
			{0, Down, data(5)},
			{1, Down, data(6)},
			{3, Up, ack(5)},
			{4, Up, ack(6)},
			{5, Up, ack(6)},
		}, samples{client: []int64{3, 3}}, MethodPrague},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tb, got := run(t, DefaultConfig, tc.steps)
			check(t, *got, tc.want)
			for _, f := range snap(tb).Flows() {
				if f.Method != tc.method {
					t.Errorf("method %v, want %v", f.Method, tc.method)
				}
			}
		})
	}
}

func check(t *testing.T, got, want samples) {
	t.Helper()
	if !slices.Equal(got.client, want.client) || !slices.Equal(got.server, want.server) {
		t.Errorf("samples client %v server %v, want client %v server %v", got.client, got.server, want.client, want.server)
	}
}

func snap(tb *Table) *Snapshot {
	s := NewSnapshot(tb)
	tb.CopyTo(s, 0)
	return s
}

// TestCaptured: a capture cut at its snap length still times the flow,
// with the segment's length taken from the IP header.
func TestCaptured(t *testing.T) {
	for _, v := range []bool{false, true} {
		tb, got := run(t, DefaultConfig, nil)
		data := tcpSeq(ackf, 1000, 1, 1200)
		data.v6 = v
		b := data.build(Up)
		tb.Captured(b[:64], len(b), Up, 0)
		tb.Captured(b[:64], 60, Up, 1) // says less than its header: malformed
		ack := tcpSeq(ackf, 1, 2200, 0)
		ack.v6 = v
		tb.Packet(ack.build(Down), Down, 9*ms)
		check(t, *got, samples{server: []int64{9}})
		if tb.Stats().Malformed != 1 {
			t.Errorf("malformed %d, want 1", tb.Stats().Malformed)
		}
	}
}

// TestRecordHandover: packets read on their own goroutines (one a
// direction, as a hop reads them) and handed over as Records give the
// owner of the table the samples Packet gives.
func TestRecordHandover(t *testing.T) {
	steps := []step{
		{0, Up, tcpTS(syn, 1000, 0, 0, 100, 0)},
		{10, Down, tcpTS(synack, 5000, 1001, 0, 900, 100)},
		{12, Up, tcpTS(ackf, 1001, 5001, 0, 102, 900)},
		{13, Up, icmp(true, icmpv6EchoRequest, 3, 1)},
		{20, Down, icmp(true, icmpv6EchoReply, 3, 1)},
	}
	_, want := run(t, DefaultConfig, steps)
	type handed struct {
		r  Record
		at int64
	}
	var byDir [2]chan handed
	for d := range byDir {
		byDir[d] = make(chan handed, len(steps))
	}
	for d := range byDir {
		go func() {
			for _, s := range steps {
				if s.d == Dir(d) {
					var r Record
					r.Parse(s.p.build(s.d), len(s.p.build(s.d)), s.d)
					byDir[d] <- handed{r, s.at * ms}
				}
			}
		}()
	}
	tb, got := run(t, DefaultConfig, nil)
	for _, s := range steps { // the owner takes them in time order
		h := <-byDir[s.d]
		tb.Observe(&h.r, h.at)
	}
	check(t, *got, *want)
	if tb.Stats().Packets != uint64(len(steps)) {
		t.Errorf("%d packets observed, want %d", tb.Stats().Packets, len(steps))
	}
}
