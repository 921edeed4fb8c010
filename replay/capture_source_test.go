package replay

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"strings"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
	"github.com/pi2hop/pi2hop/aqm"
)

// ipPacket returns a whole IPv4/UDP (or IPv6/UDP) packet of n bytes.
func ipPacket(v6 bool, n int, ecn aqm.ECN, flow uint32) []byte {
	b := make([]byte, n)
	if !v6 {
		synthHeader(b, int32(n), ecn, flow)
		return b
	}
	binary.BigEndian.PutUint32(b, 6<<28|uint32(ecn)<<20)
	binary.BigEndian.PutUint16(b[4:], uint16(n-40))
	b[6], b[7] = 17, 64
	b[8], b[39] = 0x20, 1
	binary.BigEndian.PutUint16(b[40:], uint16(flow))
	return b
}

type frame struct {
	at   time.Duration
	data []byte
	orig int // length on the wire, 0 = len(data)
}

// writeFrames writes frames of link type lt as pcap or pcapng.
func writeFrames(t *testing.T, ng bool, lt layers.LinkType, base time.Time, frames []frame) []byte {
	t.Helper()
	var buf bytes.Buffer
	var write func(gopacket.CaptureInfo, []byte) error
	var flush func() error
	if ng {
		w, err := pcapgo.NewNgWriter(&buf, lt)
		if err != nil {
			t.Fatal(err)
		}
		write, flush = w.WritePacket, w.Flush
	} else {
		w := pcapgo.NewWriterNanos(&buf)
		if err := w.WriteFileHeader(65536, lt); err != nil {
			t.Fatal(err)
		}
		write, flush = w.WritePacket, func() error { return nil }
	}
	for _, f := range frames {
		orig := max(f.orig, len(f.data))
		ci := gopacket.CaptureInfo{Timestamp: base.Add(f.at), CaptureLength: len(f.data), Length: orig}
		if err := write(ci, f.data); err != nil {
			t.Fatal(err)
		}
	}
	if err := flush(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestCaptureSource: pcap, pcapng and gzipped pcap, Ethernet and Linux
// SLL2 framing replay the same packets: times from the first IP packet,
// a step back in time clamped, a truncated packet padded to its length on
// the wire, a non-IP frame skipped.
func TestCaptureSource(t *testing.T) {
	base := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	ips := []frame{
		{0, ipPacket(false, 1500, aqm.ECT1, 1), 0},
		{100 * time.Microsecond, ipPacket(true, 1000, aqm.ECT0, 2), 0},
		{90 * time.Microsecond, ipPacket(false, 600, aqm.NotECT, 3), 0}, // earlier than its predecessor
		{300 * time.Microsecond, ipPacket(false, 1500, aqm.CE, 4)[:96], 1500},
	}
	want := []Packet{
		{Time: 0, Len: 1500, ECN: aqm.ECT1, CapLen: 1500},
		{Time: 100_000, Len: 1000, ECN: aqm.ECT0, CapLen: 1000},
		{Time: 100_000, Len: 600, ECN: aqm.NotECT, CapLen: 600},
		{Time: 300_000, Len: 1500, ECN: aqm.CE, CapLen: 96},
	}
	eth := func(ip []byte, etherType uint16) []byte {
		f := make([]byte, 14, 14+len(ip))
		binary.BigEndian.PutUint16(f[12:], etherType)
		return append(f, ip...)
	}
	sll2 := func(ip []byte, proto uint16) []byte {
		f := make([]byte, 20, 20+len(ip))
		binary.BigEndian.PutUint16(f, proto)
		return append(f, ip...)
	}
	arp := frame{50 * time.Microsecond, eth(make([]byte, 28), 0x0806), 0}
	var ethFrames, sllFrames []frame
	for k, f := range ips {
		if k == 1 {
			ethFrames = append(ethFrames, arp)
			sllFrames = append(sllFrames, frame{arp.at, sll2(make([]byte, 28), 0x0806), 0})
		}
		etype := uint16(0x0800)
		if f.data[0]>>4 == 6 {
			etype = 0x86dd
		}
		orig := 0
		if f.orig > 0 {
			orig = f.orig + 14
		}
		ethFrames = append(ethFrames, frame{f.at, eth(f.data, etype), orig})
		if f.orig > 0 {
			orig = f.orig + 20
		}
		sllFrames = append(sllFrames, frame{f.at, sll2(f.data, etype), orig})
	}
	gz := func(b []byte) []byte {
		var out bytes.Buffer
		w := gzip.NewWriter(&out)
		w.Write(b)
		w.Close()
		return out.Bytes()
	}
	files := map[string][]byte{
		"pcap":        writeFrames(t, false, layers.LinkTypeEthernet, base, ethFrames),
		"pcapng":      writeFrames(t, true, layers.LinkTypeEthernet, base, ethFrames),
		"pcap.gz":     gz(writeFrames(t, false, layers.LinkTypeEthernet, base, ethFrames)),
		"pcapng sll2": writeFrames(t, true, layers.LinkTypeLinuxSLL2, base, sllFrames),
	}
	for name, data := range files {
		src, err := NewCaptureSource(bytes.NewReader(data), "in")
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if src.Start() != base.UnixNano() {
			t.Errorf("%s: start %d, want the first packet's %d", name, src.Start(), base.UnixNano())
		}
		got := readAll(t, src)
		if len(got) != len(want) || src.Skipped() != 1 || src.Clamped() != 1 {
			t.Fatalf("%s: %d packets, %d skipped, %d clamped; want %d, 1, 1", name, len(got), src.Skipped(), src.Clamped(), len(want))
		}
		for k, w := range want {
			g := got[k]
			if g.Time != w.Time || g.Len != w.Len || g.ECN != w.ECN || g.CapLen != w.CapLen || len(g.Frame) != int(w.Len) {
				t.Errorf("%s: packet %d = time %d len %d ecn %v captured %d of %d; want time %d len %d ecn %v captured %d of %d",
					name, k, g.Time, g.Len, g.ECN, g.CapLen, len(g.Frame), w.Time, w.Len, w.ECN, w.CapLen, w.Len)
			}
			if !bytes.Equal(g.Frame[:g.CapLen], ips[k].data) {
				t.Errorf("%s: packet %d bytes differ from the captured IP packet", name, k)
			}
			if v := aqm.Header(ips[k].data); len(ips[k].data) == int(w.Len) && g.Flow != v.FlowHash() {
				t.Errorf("%s: packet %d flow %d, want the 5-tuple hash %d", name, k, g.Flow, v.FlowHash())
			}
		}
	}
}

func TestCaptureSourceErrors(t *testing.T) {
	if _, err := NewCaptureSource(strings.NewReader("time_ns,bytes,ecn\n0,1,1\n"), "x.csv"); err == nil || !strings.HasPrefix(err.Error(), "x.csv: not a pcap or pcapng capture") {
		t.Errorf("CSV as a capture: %v", err)
	}
	if _, err := NewCaptureSource(strings.NewReader(""), "empty"); err == nil || !strings.HasPrefix(err.Error(), "empty: ") {
		t.Errorf("empty file: %v", err)
	}
	data := writeFrames(t, false, layers.LinkTypeRaw, time.Unix(0, 0), []frame{{0, ipPacket(false, 200, 1, 1), 0}, {1, ipPacket(false, 200, 1, 1), 0}})
	src, err := NewCaptureSource(bytes.NewReader(data[:len(data)-50]), "trunc.pcap")
	if err != nil {
		t.Fatal(err)
	}
	var p Packet
	if ok, err := src.Next(&p); !ok || err != nil {
		t.Fatalf("first packet: %v %v", ok, err)
	}
	// A file cut mid-record replays up to its last complete record and
	// says what was cut (pcap.Truncation).
	if ok, err := src.Next(&p); ok || err != nil {
		t.Errorf("truncated file: a second packet %v, error %v; want the end", ok, err)
	}
	if w := src.Warnings(); len(w) != 1 || !strings.Contains(w[0], "trunc.pcap: truncated: the file ends") {
		t.Errorf("truncated file: warnings %q", w)
	}
}

// TestSynthHeaderIsValidIPv4: the header made up for a CSV row carries the
// row's ECN field and length, UDP, and a header checksum that verifies.
func TestSynthHeaderIsValidIPv4(t *testing.T) {
	var b [28]byte
	for _, ecn := range []aqm.ECN{aqm.NotECT, aqm.ECT1, aqm.ECT0, aqm.CE} {
		h := synthHeader(b[:], 1500, ecn, 7)
		// Only the headers are there, so aqm.Header (which wants the whole
		// packet) would call it truncated: read the fields directly.
		if h[0] != 0x45 || aqm.ECN(h[1]&3) != ecn || int(h[2])<<8|int(h[3]) != 1500 || h[9] != 17 {
			t.Errorf("ecn %v: header % x", ecn, h)
		}
		var sum uint32
		for i := 0; i < 20; i += 2 {
			sum += uint32(h[i])<<8 | uint32(h[i+1])
		}
		for sum > 0xffff {
			sum = sum&0xffff + sum>>16
		}
		if sum != 0xffff {
			t.Errorf("ecn %v: header checksum does not verify (sum %#x)", ecn, sum)
		}
	}
}

func TestChooseTap(t *testing.T) {
	pi := []string{"up-in", "up-out", "up-drop", "down-in", "down-out", "down-drop"}
	tests := []struct {
		ifaces  []string
		asked   string
		want    string
		wantErr string
	}{
		{[]string{"in.pcap"}, "", "", ""}, // one interface: all of it
		{pi, "", "up-in", ""},             // the first -in tap
		{pi, "down-in", "down-in", ""},    // as asked
		{[]string{"lab-up-in", "lab-up-out"}, "", "lab-up-in", ""},
		{[]string{"eth0", "eth1"}, "", "", "2 interfaces (eth0, eth1) and no pi2hop taps"},
		{[]string{"eth0", "login-in"}, "", "", "no pi2hop taps"}, // an -in name alone is not a pi2hop tap
		{[]string{"eth0", "eth1"}, "eth1", "eth1", ""},
		{pi, "up", "", `no interface "up" in the capture; it has up-in, up-out`},
	}
	for _, tt := range tests {
		got, note, err := ChooseTap(tt.ifaces, tt.asked)
		switch {
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("ChooseTap(%v, %q): %q, %v; want an error with %q", tt.ifaces, tt.asked, got, err, tt.wantErr)
		case tt.wantErr == "" && (err != nil || got != tt.want):
			t.Errorf("ChooseTap(%v, %q) = %q, %v; want %q", tt.ifaces, tt.asked, got, err, tt.want)
		case tt.wantErr == "" && (note != "") != (tt.asked == "" && tt.want != ""):
			t.Errorf("ChooseTap(%v, %q): note %q: want one exactly when a tap was chosen unasked", tt.ifaces, tt.asked, note)
		}
	}
}
