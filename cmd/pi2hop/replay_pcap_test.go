package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/pcap/pcaptest"
)

// ethFrame builds an Ethernet frame carrying a UDP packet of ipLen bytes
// (IPv4 or IPv6) with the given ECN codepoint and valid checksums.
func ethFrame(t *testing.T, v6 bool, ecn aqm.ECN, ipLen int, srcPort uint16) []byte {
	t.Helper()
	eth := &layers.Ethernet{SrcMAC: net.HardwareAddr{2, 0, 0, 0, 0, 1}, DstMAC: net.HardwareAddr{2, 0, 0, 0, 0, 2}}
	udp := &layers.UDP{SrcPort: layers.UDPPort(srcPort), DstPort: 443}
	var ip gopacket.SerializableLayer
	hdr := 20
	if v6 {
		eth.EthernetType = layers.EthernetTypeIPv6
		l := &layers.IPv6{Version: 6, TrafficClass: uint8(ecn), NextHeader: layers.IPProtocolUDP, HopLimit: 64,
			SrcIP: net.ParseIP("2001:db8::1"), DstIP: net.ParseIP("2001:db8::2")}
		udp.SetNetworkLayerForChecksum(l)
		ip, hdr = l, 40
	} else {
		eth.EthernetType = layers.EthernetTypeIPv4
		l := &layers.IPv4{Version: 4, IHL: 5, TOS: 0xb8 | uint8(ecn), TTL: 64, Protocol: layers.IPProtocolUDP,
			SrcIP: net.IPv4(192, 0, 2, 1), DstIP: net.IPv4(198, 51, 100, 2)}
		udp.SetNetworkLayerForChecksum(l)
		ip = l
	}
	buf := gopacket.NewSerializeBuffer()
	payload := gopacket.Payload(make([]byte, ipLen-hdr-8))
	opts := gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}
	if err := gopacket.SerializeLayers(buf, opts, eth, ip, udp, payload); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// ipv4ChecksumOK recomputes the IPv4 header checksum in full.
func ipv4ChecksumOK(h []byte) bool {
	return binary.BigEndian.Uint16(h[10:]) == pcaptest.IPv4Checksum(h[:int(h[0]&15)*4])
}

type capPacket struct {
	at      time.Duration // after the first packet
	frame   []byte
	capture int // captured bytes, 0 = all
}

func writeCapture(t *testing.T, path string, ng bool, base time.Time, pkts []capPacket) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var write func(gopacket.CaptureInfo, []byte) error
	if ng {
		w, err := pcapgo.NewNgWriter(f, layers.LinkTypeEthernet)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Flush()
		write = w.WritePacket
	} else {
		w := pcapgo.NewWriterNanos(f)
		if err := w.WriteFileHeader(65536, layers.LinkTypeEthernet); err != nil {
			t.Fatal(err)
		}
		write = w.WritePacket
	}
	for _, p := range pkts {
		data := p.frame
		if p.capture > 0 {
			data = data[:p.capture]
		}
		ci := gopacket.CaptureInfo{Timestamp: base.Add(p.at), CaptureLength: len(data), Length: len(p.frame)}
		if err := write(ci, data); err != nil {
			t.Fatal(err)
		}
	}
}

// TestReplayPcapRoundTrip writes a capture (pcap and pcapng, Ethernet,
// with an ARP frame and a truncated packet), replays it with --pcap-out
// and checks the output capture: every delivered packet once, at its
// release time, CE exactly where replay says it marked, IPv4 checksums
// valid, nothing else changed.
func TestReplayPcapRoundTrip(t *testing.T) {
	dir := t.TempDir()
	base := time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)
	arp := ethFrame(t, false, 0, 100, 1)
	binary.BigEndian.PutUint16(arp[12:], uint16(layers.EthernetTypeARP))
	in := []capPacket{
		{0, ethFrame(t, false, aqm.ECT1, 1500, 1), 0},
		{0, ethFrame(t, false, aqm.ECT1, 1500, 1), 0},
		{0, ethFrame(t, false, aqm.ECT1, 1500, 1), 0},
		{10 * time.Microsecond, arp, 0},
		{100 * time.Microsecond, ethFrame(t, true, aqm.ECT1, 1500, 2), 0},
		{200 * time.Microsecond, ethFrame(t, false, aqm.ECT0, 1500, 3), 0},
		{300 * time.Microsecond, ethFrame(t, false, aqm.NotECT, 1500, 4), 0},
		{400 * time.Microsecond, ethFrame(t, false, aqm.ECT1, 1500, 5), 96}, // snaplen 96
	}
	var outputs []string
	for _, ng := range []bool{false, true} {
		inPath := filepath.Join(dir, "in.pcap")
		outPath := filepath.Join(dir, "out.pcap")
		os.Remove(outPath) // replay never overwrites an output; same name, same printout
		writeCapture(t, inPath, ng, base, in)
		stdout, err := runCLI(t, "", "replay", "--pcap", inPath, "--pcap-out", outPath, "--rate", "10mbit", "--delay", "5ms")
		if err != nil {
			t.Fatal(err)
		}
		outputs = append(outputs, stdout)
		got := parseReplay(t, stdout)
		if got.summary.Packets != 7 {
			t.Fatalf("%d packets replayed, want 7 (the ARP frame skipped)", got.summary.Packets)
		}
		if p := got.byRow[6]; p.ECNIn != 1 || *p.Dep-*p.Deq != 1_200_000 {
			t.Errorf("truncated packet: ecn_in %d, transmission %d ns: want ECT(1), 1500 bytes' worth", p.ECNIn, *p.Dep-*p.Deq)
		}
		marked := 0
		var delivered []outLine
		for _, p := range got.pkts {
			if p.Verdict != "dropped" {
				delivered = append(delivered, p)
			}
			if p.Verdict == "marked" {
				marked++
			}
		}
		if marked == 0 {
			t.Fatal("no packet marked: the test needs some")
		}

		f, err := os.Open(outPath)
		if err != nil {
			t.Fatal(err)
		}
		r, err := pcapgo.NewReader(f)
		if err != nil {
			t.Fatal(err)
		}
		if r.LinkType() != layers.LinkTypeRaw {
			t.Errorf("output link type %v, want raw IP", r.LinkType())
		}
		for k := 0; ; k++ {
			data, ci, err := r.ReadPacketData()
			if err != nil {
				if k != len(delivered) {
					t.Errorf("%d packets in --pcap-out, want %d (%v)", k, len(delivered), err)
				}
				break
			}
			if k >= len(delivered) {
				continue
			}
			p := delivered[k]
			if want := base.Add(time.Duration(*p.Dep + 5_000_000)); !ci.Timestamp.Equal(want) {
				t.Errorf("out packet %d (row %d) at %v, want release time %v", k, p.I, ci.Timestamp, want)
			}
			src := p.I // rows skip the ARP frame at index 3
			if src >= 3 {
				src++
			}
			ip := in[src].frame[14:]
			if ci.Length != len(ip) || (p.I != 6 && len(data) != len(ip)) || (p.I == 6 && len(data) != 96-14) {
				t.Errorf("out packet %d (row %d): %d of %d bytes, input had %d", k, p.I, len(data), ci.Length, len(ip))
			}
			ecn := aqm.Header(data).ECN()
			if p.I == 6 { // truncated: not a whole packet for Header, read the IPv4 TOS
				ecn = aqm.ECN(data[1] & 3)
			}
			if int(ecn) != p.ECNOut {
				t.Errorf("row %d: ECN %v in the capture, replay says ecn_out %d", p.I, ecn, p.ECNOut)
			}
			if data[0]>>4 == 4 && !ipv4ChecksumOK(data) {
				t.Errorf("row %d: IPv4 header checksum wrong after marking", p.I)
			}
			// Only the ECN bits (and the IPv4 checksum) may change.
			diff := 0
			for i := range data {
				if data[i] != ip[i] {
					diff++
				}
			}
			if p.Verdict == "sent" && diff != 0 || p.Verdict == "marked" && diff > 3 {
				t.Errorf("row %d (%s): %d bytes changed", p.I, p.Verdict, diff)
			}
		}
		f.Close()
	}
	// pcap and pcapng inputs replay identically (apart from the file name).
	if strings.ReplaceAll(outputs[0], "in.pcap", "") != strings.ReplaceAll(outputs[1], "in.pcap", "") {
		t.Error("pcap and pcapng inputs gave different output")
	}
}

func TestReplayPcapErrors(t *testing.T) {
	dir := t.TempDir()
	notPcap := filepath.Join(dir, "x.csv")
	os.WriteFile(notPcap, []byte("time_ns,bytes,ecn\n"), 0o644)
	tr := filepath.Join(dir, "trunc.pcap")
	writeCapture(t, tr, false, time.Unix(0, 0), []capPacket{{0, ethFrame(t, false, 1, 200, 1), 0}})
	data, _ := os.ReadFile(tr)
	os.WriteFile(tr, data[:len(data)-50], 0o644)
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--pcap", notPcap}, "x.csv: not a pcap or pcapng capture"},
		{[]string{"--pcap", filepath.Join(dir, "missing.pcap")}, "--pcap: open "},
	}
	for _, tt := range tests {
		_, err := runCLI(t, "", append([]string{"replay"}, tt.args...)...)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%v: error %v, want %q", tt.args, err, tt.want)
		}
	}
	// A capture cut mid-record is no error: it replays up to its last
	// complete record (none here) and says how much was cut.
	var stdout, stderr bytes.Buffer
	if err := Run(context.Background(), []string{"replay", "--pcap", tr}, strings.NewReader(""), &stdout, &stderr); err != nil {
		t.Errorf("cut capture: %v", err)
	}
	if want := "replay: warning: " + tr + ": truncated: the file ends "; !strings.Contains(stderr.String(), want) {
		t.Errorf("cut capture: stderr %q, want %q", stderr.String(), want)
	}
}

// FuzzPcapFrame replays a capture holding arbitrary frames of each
// supported link type: never a panic, and every frame is either replayed
// or counted as skipped.
func FuzzPcapFrame(f *testing.F) {
	f.Add(uint8(0), []byte{0x45, 0x01, 0x00, 0x14})
	f.Add(uint8(1), make([]byte, 14))
	f.Add(uint8(2), []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x81, 0x00, 0, 0, 0x86, 0xdd})
	linkTypes := []layers.LinkType{layers.LinkTypeRaw, layers.LinkTypeEthernet, layers.LinkTypeLinuxSLL, layers.LinkTypeIPv6}
	f.Fuzz(func(t *testing.T, lt uint8, frame []byte) {
		if len(frame) == 0 {
			return
		}
		var buf bytes.Buffer
		w := pcapgo.NewWriterNanos(&buf)
		w.WriteFileHeader(65536, linkTypes[int(lt)%len(linkTypes)])
		ci := gopacket.CaptureInfo{Timestamp: time.Unix(1, 0), CaptureLength: len(frame), Length: len(frame) + int(lt)}
		w.WritePacket(ci, frame)
		w.WritePacket(ci, frame)
		out, err := runCLI(t, buf.String(), "replay", "--pcap", "-")
		if err != nil {
			t.Fatal(err)
		}
		got := parseReplay(t, out)
		var in struct{ Input struct{ Skipped int } }
		json.Unmarshal([]byte(out[strings.LastIndex(out, `{"type":"summary"`):]), &in)
		if got.summary.Packets+in.Input.Skipped != 2 {
			t.Fatalf("%d replayed + %d skipped, want 2", got.summary.Packets, in.Input.Skipped)
		}
	})
}
