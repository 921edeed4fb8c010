package aqm

import (
	"encoding/binary"
	"slices"
	"testing"
)

// ipv4Checksum computes the header checksum from scratch (RFC 1071),
// treating the checksum field as zero.
func ipv4Checksum(h []byte) uint16 {
	var sum uint32
	for i := 0; i+1 < len(h); i += 2 {
		if i == 10 {
			continue
		}
		sum += uint32(binary.BigEndian.Uint16(h[i:]))
	}
	for sum > 0xffff {
		sum = sum&0xffff + sum>>16
	}
	return ^uint16(sum)
}

// ipv4Packet builds an IPv4/UDP packet with a correct header checksum.
func ipv4Packet(tos byte, payload int) []byte {
	p := make([]byte, 20+8+payload)
	p[0] = 0x45
	p[1] = tos
	binary.BigEndian.PutUint16(p[2:], uint16(len(p)))
	p[8] = 64
	p[9] = 17
	copy(p[12:], []byte{10, 0, 0, 1, 10, 0, 0, 2})
	binary.BigEndian.PutUint16(p[20:], 4000)
	binary.BigEndian.PutUint16(p[22:], 5000)
	binary.BigEndian.PutUint16(p[10:], ipv4Checksum(p[:20]))
	return p
}

// ipv6Packet builds an IPv6/UDP packet with the given traffic class.
func ipv6Packet(tclass byte, payload int) []byte {
	p := make([]byte, 40+8+payload)
	p[0] = 0x60 | tclass>>4
	p[1] = tclass << 4
	binary.BigEndian.PutUint16(p[4:], uint16(8+payload))
	p[6] = 17
	p[7] = 64
	p[23], p[39] = 1, 2
	binary.BigEndian.PutUint16(p[40:], 4000)
	binary.BigEndian.PutUint16(p[42:], 5000)
	return p
}

// Every TOS / traffic class value: ECN read, SetCE result, DSCP kept,
// IPv4 checksum still correct.
func TestHeaderAllTOS(t *testing.T) {
	for tos := range 256 {
		want := ECN(tos & 3)
		for _, p := range [][]byte{ipv4Packet(byte(tos), 10), ipv6Packet(byte(tos), 10)} {
			v := Header(p)
			orig := append([]byte(nil), p...)
			if v.ECN() != want {
				t.Fatalf("v%d tos %#x: ECN %v, want %v", v.Version(), tos, v.ECN(), want)
			}
			ok := v.SetCE()
			if ok != (want != NotECT) {
				t.Fatalf("v%d tos %#x: SetCE = %v", v.Version(), tos, ok)
			}
			wantECN := want
			if ok {
				wantECN = CE
			}
			if v.ECN() != wantECN {
				t.Fatalf("v%d tos %#x: after SetCE ECN %v, want %v", v.Version(), tos, v.ECN(), wantECN)
			}
			// Only the ECN bits (and the IPv4 checksum) may change.
			for i := range p {
				if p[i] == orig[i] || (v.Version() == 4 && (i == 1 || i == 10 || i == 11)) ||
					(v.Version() == 6 && i == 1) {
					continue
				}
				t.Fatalf("v%d tos %#x: byte %d changed", v.Version(), tos, i)
			}
			if v.Version() == 4 {
				if p[1]&^3 != byte(tos)&^3 {
					t.Fatalf("tos %#x: DSCP changed to %#x", tos, p[1])
				}
				if got, want := binary.BigEndian.Uint16(p[10:]), ipv4Checksum(p[:20]); got != want {
					t.Fatalf("tos %#x: checksum %#04x, full recompute %#04x", tos, got, want)
				}
			} else if p[0] != orig[0] || p[1]&0xcf != orig[1]&0xcf {
				t.Fatalf("tclass %#x: traffic class DSCP or flow label changed", tos)
			}
		}
	}
}

func TestHeaderInvalid(t *testing.T) {
	good4 := ipv4Packet(1, 0)
	good6 := ipv6Packet(1, 0)
	mutate := func(p []byte, f func([]byte)) []byte {
		c := append([]byte(nil), p...)
		f(c)
		return c
	}
	tests := []struct {
		name string
		pkt  []byte
	}{
		{"empty", nil},
		{"one byte", []byte{0x45}},
		{"IPv4 truncated header", good4[:19]},
		{"IPv4 IHL 4", mutate(good4, func(p []byte) { p[0] = 0x44 })},
		{"IPv4 IHL beyond packet", mutate(good4, func(p []byte) { p[0] = 0x4f })},
		{"IPv4 total length < IHL", mutate(good4, func(p []byte) { binary.BigEndian.PutUint16(p[2:], 19) })},
		{"IPv4 total length > buffer", mutate(good4, func(p []byte) { binary.BigEndian.PutUint16(p[2:], uint16(len(p)+1)) })},
		{"IPv6 truncated header", good6[:39]},
		{"IPv6 payload beyond buffer", mutate(good6, func(p []byte) { binary.BigEndian.PutUint16(p[4:], 100) })},
		{"version 5", mutate(good4, func(p []byte) { p[0] = 0x55 })},
		{"ARP-ish", []byte{0, 1, 8, 0, 6, 4, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}},
	}
	for _, tt := range tests {
		v := Header(tt.pkt)
		orig := string(tt.pkt)
		if v.Valid() || v.Version() != 0 || v.ECN() != NotECT || v.Len() != 0 || v.FlowHash() != 0 || v.SetCE() {
			t.Errorf("%s: valid=%v version=%d ecn=%v len=%d", tt.name, v.Valid(), v.Version(), v.ECN(), v.Len())
		}
		if string(tt.pkt) != orig {
			t.Errorf("%s: modified", tt.name)
		}
		if m := MetaOf(tt.pkt, 3); m.ECN != NotECT || m.Len != int32(len(tt.pkt)) || m.Slot != 3 {
			t.Errorf("%s: MetaOf = %+v", tt.name, m)
		}
	}
}

func TestHeaderLenAndPadding(t *testing.T) {
	p := append(ipv4Packet(2, 10), 0, 0, 0, 0) // link padding after the IP packet
	if v := Header(p); !v.Valid() || v.Len() != 38 || v.ECN() != ECT0 {
		t.Errorf("padded IPv4: valid %v len %d ecn %v", v.Valid(), v.Len(), v.ECN())
	}
	if v := Header(ipv6Packet(1, 12)); v.Len() != 60 || v.Version() != 6 {
		t.Errorf("IPv6: len %d version %d", v.Len(), v.Version())
	}
	if m := MetaOf(p, 9); m.Len != int32(len(p)) || m.ECN != ECT0 || m.Flow == 0 || m.Slot != 9 {
		t.Errorf("MetaOf = %+v", m)
	}
}

func TestFlowHash(t *testing.T) {
	base := Header(ipv4Packet(1, 0)).FlowHash()
	if base == 0 {
		t.Fatal("hash 0 for a valid packet")
	}
	// Same 5-tuple, different ECN and payload: same flow.
	if Header(ipv4Packet(2, 100)).FlowHash() != base {
		t.Error("ECN or payload changed the flow hash")
	}
	tests := []struct {
		name string
		f    func([]byte)
		same bool
	}{
		{"source port", func(p []byte) { p[21]++ }, false},
		{"destination port", func(p []byte) { p[23]++ }, false},
		{"source address", func(p []byte) { p[15]++ }, false},
		{"protocol", func(p []byte) { p[9] = 47 }, false},
		// A non-first fragment has no ports: ports are ignored.
		{"fragment ignores ports", func(p []byte) { p[7] = 1; p[21]++ }, true},
	}
	for _, tt := range tests {
		p := ipv4Packet(1, 0)
		ref := ipv4Packet(1, 0)
		if tt.name == "fragment ignores ports" {
			ref[7] = 1
		}
		tt.f(p)
		if got := Header(p).FlowHash() == Header(ref).FlowHash(); got != tt.same {
			t.Errorf("%s: same hash = %v, want %v", tt.name, got, tt.same)
		}
	}
	p6 := ipv6Packet(1, 0)
	h6 := Header(p6).FlowHash()
	p6[41]++
	if Header(p6).FlowHash() == h6 || h6 == 0 {
		t.Error("IPv6 source port not in the hash")
	}
}

// FuzzHeader: arbitrary bytes never panic, Not-ECT and invalid headers are
// never changed, and after SetCE an IPv4 header whose checksum was right
// still has a right checksum (incremental update = full recompute).
func FuzzHeader(f *testing.F) {
	f.Add(ipv4Packet(1, 4))
	f.Add(ipv4Packet(2, 0))
	f.Add(ipv4Packet(0, 0))
	f.Add(ipv6Packet(1, 4))
	f.Add([]byte{0x4f, 3, 0, 60})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		v := Header(b)
		orig := string(b)
		valid, version, ecn := v.Valid(), v.Version(), v.ECN()
		_ = v.Len()
		_ = v.FlowHash()
		_ = MetaOf(b, 0)
		csumOK := version == 4 && binary.BigEndian.Uint16(b[10:]) == ipv4Checksum(b[:int(b[0]&0xf)*4])
		marked := v.SetCE()
		if marked != (valid && ecn != NotECT) {
			t.Fatalf("SetCE = %v for valid=%v ecn=%v", marked, valid, ecn)
		}
		if !marked {
			if string(b) != orig {
				t.Fatal("unmarked packet modified")
			}
			return
		}
		if v.ECN() != CE {
			t.Fatalf("after SetCE: ECN %v", v.ECN())
		}
		if csumOK {
			h := b[:int(b[0]&0xf)*4]
			if got, want := binary.BigEndian.Uint16(h[10:]), ipv4Checksum(h); got != want {
				t.Fatalf("checksum %#04x after SetCE, full recompute %#04x", got, want)
			}
		}
	})
}

func TestChecksum(t *testing.T) {
	for _, ecn := range []ECN{NotECT, ECT1, ECT0, CE} {
		h := ipv4Packet(byte(ecn), 60)[:20]
		if got := Checksum(h); got != 0 {
			t.Errorf("ecn %v: checksum over an intact header = %#04x, want 0", ecn, got)
		}
		h[10], h[11] = 0, 0
		if got, want := Checksum(h), ipv4Checksum(h); got != want {
			t.Errorf("ecn %v: checksum with the field zeroed = %#04x, want %#04x", ecn, got, want)
		}
	}
	// RFC 1071 §3 example: the words sum to 0xddf2, so the checksum is
	// 0x220d. An odd length pads with a zero byte.
	if got := Checksum([]byte{0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7}); got != 0x220d {
		t.Errorf("RFC 1071 example: %#04x, want 0x220d (the ones' complement of the sum ddf2)", got)
	}
	if Checksum([]byte{0x12}) != Checksum([]byte{0x12, 0x00}) {
		t.Error("odd length is not padded with a zero byte")
	}
}

// MetaOf takes the DSCP from the upper six bits of the TOS / traffic
// class and the ECN from the lower two, for every value (NQB is 45 << 2 |
// ECN = 0xb4..0xb7, RFC 9956 §4).
func TestMetaOfDSCP(t *testing.T) {
	for tos := range 256 {
		for _, p := range [][]byte{ipv4Packet(byte(tos), 10), ipv6Packet(byte(tos), 10)} {
			m := MetaOf(p, 0)
			if m.DSCP != uint8(tos>>2) || m.ECN != ECN(tos&3) || m.DSField() != uint8(tos) {
				t.Fatalf("tos %#x (IPv%d): DSCP %d ECN %v DSField %#x, want %d %v %#x",
					tos, p[0]>>4, m.DSCP, m.ECN, m.DSField(), tos>>2, ECN(tos&3), tos)
			}
			if got := Header(p).DSCP(); got != uint8(tos>>2) {
				t.Fatalf("tos %#x: Header.DSCP %d", tos, got)
			}
		}
	}
	if m := MetaOf([]byte{0x45, 0xb5}, 0); m.DSCP != 0 || m.ECN != NotECT {
		t.Fatalf("short packet: DSCP %d ECN %v, want 0 Not-ECT", m.DSCP, m.ECN)
	}
	if m := MetaOf(ipv4Packet(0xb5, 10), 0); m.DSCP != DSCPNQB {
		t.Fatalf("TOS 0xb5: DSCP %d, want NQB %d", m.DSCP, DSCPNQB)
	}
}

// MetaOfKeyed agrees with MetaOf and FlowHashKeyed, for each kind of
// header the hash reads differently.
func TestMetaOfKeyed(t *testing.T) {
	v4 := []byte{0x45, 0x01, 0, 28, 0, 0, 0, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2, 0x12, 0x34, 0x56, 0x78, 0, 8, 0, 0}
	frag := slices.Clone(v4)
	frag[7] = 1 // a non-first fragment: no ports
	v6 := make([]byte, 48)
	v6[0], v6[5], v6[6], v6[23], v6[39], v6[41] = 0x60, 8, 6, 1, 2, 80
	for _, p := range [][]byte{v4, frag, v6, {0x45}, nil} {
		for _, key := range []uint32{0, 1, 0xdeadbeef} {
			m, k := MetaOfKeyed(p, 7, key)
			if m != MetaOf(p, 7) || k != Header(p).FlowHashKeyed(key) {
				t.Errorf("% x key %#x: %+v %#x; want %+v %#x", p, key, m, k, MetaOf(p, 7), Header(p).FlowHashKeyed(key))
			}
		}
	}
}

// SetDSField writes any DS field over any other: the field reads back,
// nothing else changes but the IPv4 checksum, and that checksum equals a
// full recompute (RFC 1624's incremental update, as SetCE uses).
func TestSetDSFieldAllPairs(t *testing.T) {
	for from := range 256 {
		for to := range 256 {
			for _, p := range [][]byte{ipv4Packet(byte(from), 10), ipv6Packet(byte(from), 10)} {
				v := Header(p)
				orig := append([]byte(nil), p...)
				if !v.SetDSField(byte(to)) {
					t.Fatalf("v%d %#x -> %#x: SetDSField = false", v.Version(), from, to)
				}
				if v.DSField() != byte(to) || v.ECN() != ECN(to&3) || v.DSCP() != byte(to)>>2 {
					t.Fatalf("v%d %#x -> %#x: reads DS %#x", v.Version(), from, to, v.DSField())
				}
				for i := range p {
					if p[i] == orig[i] || (v.Version() == 4 && (i == 1 || i == 10 || i == 11)) ||
						(v.Version() == 6 && (i == 0 || i == 1)) {
						continue
					}
					t.Fatalf("v%d %#x -> %#x: byte %d changed", v.Version(), from, to, i)
				}
				if v.Version() == 4 {
					if got := Checksum(p[:20]); got != 0 {
						t.Fatalf("%#x -> %#x: header checksum does not verify (%#04x)", from, to, got)
					}
				} else if p[0]>>4 != 6 || p[1]&0x0f != orig[1]&0x0f {
					t.Fatalf("tclass %#x -> %#x: version or flow label changed", from, to)
				}
			}
		}
	}
	if Header([]byte{0x45, 0}).SetDSField(0) {
		t.Error("SetDSField on a truncated header reports true")
	}
}
