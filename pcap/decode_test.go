package pcap

import (
	"encoding/binary"
	"hash/maphash"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
	"github.com/pi2hop/pi2hop/aqm"
)

func TestValidTransition(t *testing.T) {
	// RFC 3168 §5 / RFC 9331: a hop may only leave the codepoint alone
	// or set CE on an ECN-capable packet.
	valid := map[[2]aqm.ECN]bool{
		{aqm.NotECT, aqm.NotECT}: true,
		{aqm.ECT1, aqm.ECT1}:     true,
		{aqm.ECT0, aqm.ECT0}:     true,
		{aqm.ECT1, aqm.CE}:       true,
		{aqm.ECT0, aqm.CE}:       true,
		{aqm.CE, aqm.CE}:         true,
	}
	for in := aqm.NotECT; in <= aqm.CE; in++ {
		for out := aqm.NotECT; out <= aqm.CE; out++ {
			if got := ValidTransition(in, out); got != valid[[2]aqm.ECN{in, out}] {
				t.Errorf("ValidTransition(%v, %v) = %v", in, out, got)
			}
		}
	}
}

func TestDecodeIP(t *testing.T) {
	tcp4 := testPacket{src: cli4, dst: srv4, proto: 6, sport: 1000, dport: 2000, ecn: aqm.ECT1, id: 77, payload: 10}
	withOptions := tcp4
	withOptions.ipv4HeaderLength = 28
	bad := tcp4
	bad.badCsum = true
	udp6 := testPacket{src: cli6, dst: srv6, proto: 17, sport: 53, dport: 5353, ecn: aqm.ECT0, id: 0xabcde, payload: 4}
	frag := tcp4.build()
	binary.BigEndian.PutUint16(frag[6:], 0x0010) // fragment offset 16: no ports
	binary.BigEndian.PutUint16(frag[10:], 0)
	binary.BigEndian.PutUint16(frag[10:], ipv4Checksum(frag[:20]))

	for _, tc := range []struct {
		name          string
		pkt           []byte
		ok            bool
		version       uint8
		ecn           aqm.ECN
		sport, dport  uint16
		ident         uint32
		checked, csum bool
	}{
		{"ipv4 tcp", tcp4.build(), true, 4, aqm.ECT1, 1000, 2000, 77, true, true},
		{"ipv4 with options", withOptions.build(), true, 4, aqm.ECT1, 1000, 2000, 77, true, true},
		{"ipv4 bad checksum", bad.build(), true, 4, aqm.ECT1, 1000, 2000, 77, true, false},
		{"ipv4 marked by the hop", setCE(tcp4.build()), true, 4, aqm.CE, 1000, 2000, 77, true, true},
		{"ipv4 truncated options", withOptions.build()[:24], true, 4, aqm.ECT1, 0, 0, 77, false, false},
		{"ipv4 later fragment", frag, true, 4, aqm.ECT1, 0, 0, 77, true, true},
		{"ipv6 udp", udp6.build(), true, 6, aqm.ECT0, 53, 5353, 0xabcde, false, false},
		{"ipv6 marked", setCE(udp6.build()), true, 6, aqm.CE, 53, 5353, 0xabcde, false, false},
		{"ipv6 truncated", udp6.build()[:30], false, 0, 0, 0, 0, 0, false, false},
		{"ipv4 too short", tcp4.build()[:19], false, 0, 0, 0, 0, 0, false, false},
		{"version 5", append([]byte{0x50}, make([]byte, 40)...), false, 0, 0, 0, 0, 0, false, false},
		{"empty", nil, false, 0, 0, 0, 0, 0, false, false},
	} {
		h, ok := decodeIP(tc.pkt)
		if ok != tc.ok {
			t.Errorf("%s: ok %v, want %v", tc.name, ok, tc.ok)
			continue
		}
		if !ok {
			continue
		}
		if h.version != tc.version || h.ecn != tc.ecn || h.flow.SrcPort != tc.sport || h.flow.DstPort != tc.dport ||
			h.ident != tc.ident || h.csumChecked != tc.checked || h.csumOK != tc.csum {
			t.Errorf("%s: got v%d %v ports %d>%d ident %#x checked %v ok %v", tc.name,
				h.version, h.ecn, h.flow.SrcPort, h.flow.DstPort, h.ident, h.csumChecked, h.csumOK)
		}
	}
}

func TestStripLink(t *testing.T) {
	ip := testPacket{src: cli4, dst: srv4, proto: 17, payload: 20}.build()
	ip6 := testPacket{src: cli6, dst: srv6, proto: 17, payload: 20}.build()
	eth := func(etherType uint16, vlan bool, payload []byte) []byte {
		b := make([]byte, 12, 64)
		if vlan {
			b = binary.BigEndian.AppendUint16(b, 0x8100)
			b = binary.BigEndian.AppendUint16(b, 42)
		}
		b = binary.BigEndian.AppendUint16(b, etherType)
		return append(b, payload...)
	}
	sll := append(append(make([]byte, 14), 0x86, 0xdd), ip6...)
	sll2 := append(append([]byte{0x08, 0x00}, make([]byte, 18)...), ip...)
	null := append([]byte{2, 0, 0, 0}, ip...)
	for _, tc := range []struct {
		name string
		lt   layers.LinkType
		b    []byte
		hdr  int
		ok   bool
	}{
		{"raw", layers.LinkTypeRaw, ip, 0, true},
		{"raw, OpenBSD's DLT_RAW 14", 14, ip, 0, true},
		{"ipv4", layers.LinkTypeIPv4, ip, 0, true},
		{"ipv6", layers.LinkTypeIPv6, ip6, 0, true},
		{"ethernet", layers.LinkTypeEthernet, eth(0x0800, false, ip), 14, true},
		{"ethernet vlan", layers.LinkTypeEthernet, eth(0x86dd, true, ip6), 18, true},
		{"ethernet arp", layers.LinkTypeEthernet, eth(0x0806, false, make([]byte, 28)), 0, false},
		{"sll", layers.LinkTypeLinuxSLL, sll, 16, true},
		{"sll2", layers.LinkTypeLinuxSLL2, sll2, 20, true},
		{"bsd loopback", layers.LinkTypeNull, null, 4, true},
		{"raw not ip", layers.LinkTypeRaw, []byte{0x00, 1, 2}, 0, false},
		{"ppp", layers.LinkTypePPP, ip, 0, false},
		{"ethernet short", layers.LinkTypeEthernet, make([]byte, 10), 0, false},
	} {
		got, hdr, ok := stripLink(tc.lt, tc.b)
		if ok != tc.ok || (ok && (hdr != tc.hdr || len(got) != len(tc.b)-tc.hdr)) {
			t.Errorf("%s: hdr %d ok %v, want %d %v", tc.name, hdr, ok, tc.hdr, tc.ok)
		}
	}
}

// writeEthernetPcap writes frames the way tcpdump -w does on an Ethernet
// interface: classic pcap, µs timestamps, short frames padded to 60 bytes.
func writeEthernetPcap(t *testing.T, path string, times []int64, pkts [][]byte) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := pcapgo.NewWriter(f)
	if err := w.WriteFileHeader(262144, layers.LinkTypeEthernet); err != nil {
		t.Fatal(err)
	}
	for i, p := range pkts {
		frame := make([]byte, 14, 14+len(p))
		copy(frame, []byte{2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2})
		frame[12], frame[13] = 0x08, 0x00
		if p[0]>>4 == 6 {
			frame[12], frame[13] = 0x86, 0xdd
		}
		frame = append(frame, p...)
		for len(frame) < 60 {
			frame = append(frame, 0)
		}
		ci := gopacket.CaptureInfo{Timestamp: time.Unix(0, times[i]), CaptureLength: len(frame), Length: len(frame)}
		if err := w.WritePacket(ci, frame); err != nil {
			t.Fatal(err)
		}
	}
	// An ARP frame, which analysis skips.
	arp := make([]byte, 42)
	arp[12], arp[13] = 0x08, 0x06
	if err := w.WritePacket(gopacket.CaptureInfo{Timestamp: time.Unix(0, times[0]), CaptureLength: 42, Length: 42}, arp); err != nil {
		t.Fatal(err)
	}
}

// TestAnalyzeTcpdumpPair analyses two Ethernet captures taken before and
// after a bottleneck: packets are matched across them, marks, losses,
// bad transitions and checksum errors are found.
func TestAnalyzeTcpdumpPair(t *testing.T) {
	dir := t.TempDir()
	var inPkts, outPkts [][]byte
	var inT, outT []int64
	base := scenarioStart
	for i := range 10 {
		var tp testPacket
		if i%2 == 0 {
			tp = testPacket{src: cli4, dst: srv4, proto: 6, sport: 3000, dport: 80, ecn: aqm.ECT0, id: uint32(100 + i), payload: 0, seq: uint32(i)}
		} else {
			tp = testPacket{src: cli6, dst: srv6, proto: 6, sport: 3001, dport: 80, ecn: aqm.ECT1, payload: 500, seq: uint32(i)}
		}
		p := tp.build()
		inPkts, inT = append(inPkts, p), append(inT, base+int64(i)*1e6)
		switch i {
		case 3, 6: // lost on the way
			continue
		case 0, 1: // marked
			p = setCE(p)
		case 4: // bleached to Not-ECT, checksum fixed: an invalid transition
			p = append([]byte(nil), p...)
			p[1] &^= 3
			binary.BigEndian.PutUint16(p[10:], ipv4Checksum(p[:20]))
		case 8: // header corrupted on the way
			p = append([]byte(nil), p...)
			p[10] ^= 0xff
		}
		outPkts, outT = append(outPkts, p), append(outT, base+int64(i)*1e6+20e6)
	}
	in, out := filepath.Join(dir, "client.pcap"), filepath.Join(dir, "server.pcap")
	writeEthernetPcap(t, in, inT, inPkts)
	writeEthernetPcap(t, out, outT, outPkts)

	// Given out first: Analyze reads ingress files first.
	res, err := Analyze([]Input{{Path: out, Role: "out"}, {Path: in, Role: "in"}}, AnalyzeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Files) != 2 || res.Files[0].Skipped != 1 || res.Files[0].Format != "pcap" {
		t.Errorf("files %+v, want 2 pcap files with one skipped ARP frame each", res.Files)
	}
	d := res.Direction("path")
	if d == nil {
		t.Fatalf("no direction \"path\" in %+v", res.Directions)
	}
	c, l := d.Class(aqm.Classic), d.Class(aqm.L4S)
	if c.In != 5 || c.Sent != 4 || c.Marked != 1 || c.Dropped != 1 || c.DropsBy["unseen"] != 1 {
		t.Errorf("C: in %d sent %d marked %d dropped %d %v; want 5 4 1 1 unseen", c.In, c.Sent, c.Marked, c.Dropped, c.DropsBy)
	}
	if l.In != 5 || l.Sent != 4 || l.Marked != 1 || l.Dropped != 1 {
		t.Errorf("L: in %d sent %d marked %d dropped %d; want 5 4 1 1", l.In, l.Sent, l.Marked, l.Dropped)
	}
	// Bytes are IP lengths: Ethernet padding of the 40-byte ACKs is not counted.
	if c.InBytes != 5*40 || l.InBytes != 5*560 {
		t.Errorf("in bytes C %d L %d, want %d %d", c.InBytes, l.InBytes, 5*40, 5*560)
	}
	if d.InvalidTransitions != 1 || d.ChecksumErrors["out"] != 1 || d.ChecksumErrors["in"] != 0 {
		t.Errorf("invalid transitions %d (want 1), checksum errors %v (want out=1)", d.InvalidTransitions, d.ChecksumErrors)
	}
	if d.Matched != 8 || d.UnmatchedIn != 2 || d.UnmatchedOut != 0 {
		t.Errorf("matched %d unmatched in %d out %d, want 8 2 0", d.Matched, d.UnmatchedIn, d.UnmatchedOut)
	}
	if l.Transit.Count != 4 || !nearSketch(l.Transit.P50, 20) || l.Transit.Max != 20 {
		t.Errorf("L transit %+v, want 4 samples of 20ms (p50 within %g)", l.Transit, SketchAccuracy)
	}
	if l.Sojourn.Count != 0 {
		t.Errorf("sojourn from a capture without annotations: %+v", l.Sojourn)
	}

	// One file alone, no roles: every packet is a single point, counted as in.
	res, err = Analyze([]Input{{Path: in}}, AnalyzeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d = res.Direction("client.pcap")
	if d == nil || d.Class(aqm.Classic).In != 5 || d.Class(aqm.L4S).In != 5 || d.Class(aqm.L4S).Dropped != 0 {
		t.Errorf("single capture: %+v", d)
	}
}

// TestMatchKey: a packet is the same packet at both capture points when
// only what a hop may change differs (ECN, TTL, the IPv4 header checksum,
// the TCP/UDP checksum that an offload TUN hands over as the
// pseudo-header sum), and a different one when anything else does.
func TestMatchKey(t *testing.T) {
	seed := maphash.MakeSeed()
	key := func(b []byte) uint64 {
		h, ok := decodeIP(b)
		if !ok {
			t.Fatalf("decodeIP(% x) failed", b)
		}
		return h.matchKey(seed, b)
	}
	tcp4 := testPacket{src: cli4, dst: srv4, proto: 6, sport: 1000, dport: 2000, ecn: aqm.ECT1, id: 7, payload: 30, seq: 9}
	udp6 := testPacket{src: cli6, dst: srv6, proto: 17, sport: 53, dport: 5353, ecn: aqm.ECT0, id: 5, payload: 30, seq: 9}
	// edit returns a copy of b changed by f.
	edit := func(b []byte, f func(b []byte)) []byte {
		c := append([]byte(nil), b...)
		f(c)
		return c
	}
	for _, tc := range []struct {
		name string
		base []byte
		f    func(b []byte)
		same bool
	}{
		{"ipv4 tcp: CE set", tcp4.build(), func(b []byte) { copy(b, setCE(b)) }, true},
		{"ipv4 tcp: TTL and header checksum", tcp4.build(), func(b []byte) { b[8]--; b[10] ^= 1 }, true},
		{"ipv4 tcp: checksum field", tcp4.build(), func(b []byte) { b[20+16] ^= 0xff; b[20+17] ^= 0x0f }, true},
		{"ipv4 tcp: sequence number", tcp4.build(), func(b []byte) { b[20+7] ^= 1 }, false},
		{"ipv4 tcp: payload byte", tcp4.build(), func(b []byte) { b[45] ^= 1 }, false},
		{"ipv4 tcp: urgent pointer beside the checksum", tcp4.build(), func(b []byte) { b[20+18] ^= 1 }, false},
		{"ipv4 tcp: identification", tcp4.build(), func(b []byte) { b[5] ^= 1 }, false},
		{"ipv6 udp: checksum field", udp6.build(), func(b []byte) { b[40+6] ^= 0xff; b[40+7] ^= 0xff }, true},
		{"ipv6 udp: hop limit and CE", udp6.build(), func(b []byte) { b[7]--; copy(b, setCE(b)) }, true},
		{"ipv6 udp: length field of UDP", udp6.build(), func(b []byte) { b[40+5] ^= 1 }, false},
		{"ipv6 udp: payload byte", udp6.build(), func(b []byte) { b[50] ^= 1 }, false},
	} {
		got := key(tc.base) == key(edit(tc.base, tc.f))
		if got != tc.same {
			t.Errorf("%s: same key %v, want %v", tc.name, got, tc.same)
		}
	}
}
