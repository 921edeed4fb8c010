package pcap

import (
	"encoding/binary"
	"net/netip"

	"github.com/pi2hop/pi2hop/aqm"
)

// testPacket describes a packet for the tests to build.
type testPacket struct {
	src, dst         netip.Addr
	proto            uint8 // 6 TCP, 17 UDP
	sport, dport     uint16
	ecn              aqm.ECN
	id               uint32 // IPv4 identification (low 16 bits); IPv6: flow label
	payload          int    // bytes after the transport header
	seq              uint32 // TCP sequence number / UDP first payload word
	badCsum          bool   // corrupt the IPv4 header checksum
	ipv4HeaderLength int    // 0 = 20
}

var (
	cli4 = netip.MustParseAddr("10.0.0.1")
	srv4 = netip.MustParseAddr("10.0.1.1")
	cli6 = netip.MustParseAddr("fd00::1")
	srv6 = netip.MustParseAddr("fd00:1::1")
)

// build returns the IP packet.
func (p testPacket) build() []byte {
	thl := 8
	if p.proto == 6 {
		thl = 20
	}
	var b []byte
	var l4 int
	if p.src.Is4() {
		hl := p.ipv4HeaderLength
		if hl == 0 {
			hl = 20
		}
		b = make([]byte, hl+thl+p.payload)
		b[0] = 0x40 | byte(hl/4)
		b[1] = byte(p.ecn)
		binary.BigEndian.PutUint16(b[2:], uint16(len(b)))
		binary.BigEndian.PutUint16(b[4:], uint16(p.id))
		b[6] = 0x40 // DF
		b[8] = 64
		b[9] = p.proto
		s, d := p.src.As4(), p.dst.As4()
		copy(b[12:], s[:])
		copy(b[16:], d[:])
		for i := 20; i < hl; i++ {
			b[i] = 1 // NOP options
		}
		binary.BigEndian.PutUint16(b[10:], ipv4Checksum(b[:hl]))
		if p.badCsum {
			b[10] ^= 0x5a
		}
		l4 = hl
	} else {
		b = make([]byte, 40+thl+p.payload)
		binary.BigEndian.PutUint32(b[0:], 6<<28|uint32(p.ecn)<<20|p.id&0xfffff)
		binary.BigEndian.PutUint16(b[4:], uint16(thl+p.payload))
		b[6] = p.proto
		b[7] = 64
		s, d := p.src.As16(), p.dst.As16()
		copy(b[8:], s[:])
		copy(b[24:], d[:])
		l4 = 40
	}
	binary.BigEndian.PutUint16(b[l4:], p.sport)
	binary.BigEndian.PutUint16(b[l4+2:], p.dport)
	if p.proto == 6 {
		binary.BigEndian.PutUint32(b[l4+4:], p.seq)
		b[l4+12] = 5 << 4
	} else {
		binary.BigEndian.PutUint16(b[l4+4:], uint16(thl+p.payload))
		if p.payload >= 4 {
			binary.BigEndian.PutUint32(b[l4+8:], p.seq)
		}
	}
	return b
}

// ipv4Checksum computes the header checksum with the checksum field
// taken as zero.
func ipv4Checksum(h []byte) uint16 {
	var sum uint32
	for i := 0; i+1 < len(h); i += 2 {
		if i == 10 {
			continue
		}
		sum += uint32(h[i])<<8 | uint32(h[i+1])
	}
	for sum > 0xffff {
		sum = sum&0xffff + sum>>16
	}
	return ^uint16(sum)
}

// setCE marks a built packet CE and fixes the IPv4 checksum, as the hop does.
func setCE(b []byte) []byte {
	out := append([]byte(nil), b...)
	if out[0]>>4 == 4 {
		out[1] |= 3
		hl := int(out[0]&0xf) * 4
		binary.BigEndian.PutUint16(out[10:], ipv4Checksum(out[:hl]))
	} else {
		out[1] |= 0x30
	}
	return out
}
