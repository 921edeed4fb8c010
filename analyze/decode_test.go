package analyze

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
	"github.com/pi2hop/pi2hop/pcap/pcaptest"
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
	tcp4 := pcaptest.Packet{Src: pcaptest.Cli4, Dst: pcaptest.Srv4, Proto: 6, SPort: 1000, DPort: 2000, ECN: aqm.ECT1, ID: 77, Payload: 10}
	withOptions := tcp4
	withOptions.IPv4HeaderLength = 28
	bad := tcp4
	bad.BadCsum = true
	udp6 := pcaptest.Packet{Src: pcaptest.Cli6, Dst: pcaptest.Srv6, Proto: 17, SPort: 53, DPort: 5353, ECN: aqm.ECT0, ID: 0xabcde, Payload: 4}
	frag := tcp4.Build()
	binary.BigEndian.PutUint16(frag[6:], 0x0010) // fragment offset 16: no ports
	binary.BigEndian.PutUint16(frag[10:], 0)
	binary.BigEndian.PutUint16(frag[10:], pcaptest.IPv4Checksum(frag[:20]))

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
		{"ipv4 tcp", tcp4.Build(), true, 4, aqm.ECT1, 1000, 2000, 77, true, true},
		{"ipv4 with options", withOptions.Build(), true, 4, aqm.ECT1, 1000, 2000, 77, true, true},
		{"ipv4 bad checksum", bad.Build(), true, 4, aqm.ECT1, 1000, 2000, 77, true, false},
		{"ipv4 marked by the hop", pcaptest.SetCE(tcp4.Build()), true, 4, aqm.CE, 1000, 2000, 77, true, true},
		{"ipv4 truncated options", withOptions.Build()[:24], true, 4, aqm.ECT1, 0, 0, 77, false, false},
		{"ipv4 later fragment", frag, true, 4, aqm.ECT1, 0, 0, 77, true, true},
		{"ipv6 udp", udp6.Build(), true, 6, aqm.ECT0, 53, 5353, 0xabcde, false, false},
		{"ipv6 marked", pcaptest.SetCE(udp6.Build()), true, 6, aqm.CE, 53, 5353, 0xabcde, false, false},
		{"ipv6 truncated", udp6.Build()[:30], false, 0, 0, 0, 0, 0, false, false},
		{"ipv4 too short", tcp4.Build()[:19], false, 0, 0, 0, 0, 0, false, false},
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
		var tp pcaptest.Packet
		if i%2 == 0 {
			tp = pcaptest.Packet{Src: pcaptest.Cli4, Dst: pcaptest.Srv4, Proto: 6, SPort: 3000, DPort: 80, ECN: aqm.ECT0, ID: uint32(100 + i), Payload: 0, Seq: uint32(i)}
		} else {
			tp = pcaptest.Packet{Src: pcaptest.Cli6, Dst: pcaptest.Srv6, Proto: 6, SPort: 3001, DPort: 80, ECN: aqm.ECT1, Payload: 500, Seq: uint32(i)}
		}
		p := tp.Build()
		inPkts, inT = append(inPkts, p), append(inT, base+int64(i)*1e6)
		switch i {
		case 3, 6: // lost on the way
			continue
		case 0, 1: // marked
			p = pcaptest.SetCE(p)
		case 4: // bleached to Not-ECT, checksum fixed: an invalid transition
			p = append([]byte(nil), p...)
			p[1] &^= 3
			binary.BigEndian.PutUint16(p[10:], pcaptest.IPv4Checksum(p[:20]))
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
	res, err := Analyze([]Input{{Path: out, Role: "out"}, {Path: in, Role: "in"}}, Options{})
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
	res, err = Analyze([]Input{{Path: in}}, Options{})
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
	tcp4 := pcaptest.Packet{Src: pcaptest.Cli4, Dst: pcaptest.Srv4, Proto: 6, SPort: 1000, DPort: 2000, ECN: aqm.ECT1, ID: 7, Payload: 30, Seq: 9}
	udp6 := pcaptest.Packet{Src: pcaptest.Cli6, Dst: pcaptest.Srv6, Proto: 17, SPort: 53, DPort: 5353, ECN: aqm.ECT0, ID: 5, Payload: 30, Seq: 9}
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
		{"ipv4 tcp: CE set", tcp4.Build(), func(b []byte) { copy(b, pcaptest.SetCE(b)) }, true},
		{"ipv4 tcp: TTL and header checksum", tcp4.Build(), func(b []byte) { b[8]--; b[10] ^= 1 }, true},
		{"ipv4 tcp: checksum field", tcp4.Build(), func(b []byte) { b[20+16] ^= 0xff; b[20+17] ^= 0x0f }, true},
		{"ipv4 tcp: sequence number", tcp4.Build(), func(b []byte) { b[20+7] ^= 1 }, false},
		{"ipv4 tcp: payload byte", tcp4.Build(), func(b []byte) { b[45] ^= 1 }, false},
		{"ipv4 tcp: urgent pointer beside the checksum", tcp4.Build(), func(b []byte) { b[20+18] ^= 1 }, false},
		{"ipv4 tcp: identification", tcp4.Build(), func(b []byte) { b[5] ^= 1 }, false},
		{"ipv6 udp: checksum field", udp6.Build(), func(b []byte) { b[40+6] ^= 0xff; b[40+7] ^= 0xff }, true},
		{"ipv6 udp: hop limit and CE", udp6.Build(), func(b []byte) { b[7]--; copy(b, pcaptest.SetCE(b)) }, true},
		{"ipv6 udp: length field of UDP", udp6.Build(), func(b []byte) { b[40+5] ^= 1 }, false},
		{"ipv6 udp: payload byte", udp6.Build(), func(b []byte) { b[50] ^= 1 }, false},
	} {
		got := key(tc.base) == key(edit(tc.base, tc.f))
		if got != tc.same {
			t.Errorf("%s: same key %v, want %v", tc.name, got, tc.same)
		}
	}
}
