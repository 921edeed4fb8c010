// Package pcaptest builds IP packets for tests: the capture and analysis
// packages', the hop's, replay's and the command's. A test that needs a
// packet describes it here rather than writing header bytes itself.
package pcaptest

import (
	"encoding/binary"
	"net/netip"

	"github.com/pi2hop/pi2hop/aqm"
)

// Packet describes a packet for a test to build. The zero value of each
// field is the common case: no DSCP, TTL 64, a bare 20-byte TCP header
// with no flags, a 20-byte IPv4 header, IPv4 checksum right.
type Packet struct {
	Src, Dst         netip.Addr
	Proto            uint8 // 6 TCP, 17 UDP
	SPort, DPort     uint16
	ECN              aqm.ECN
	DSCP             uint8  // the DS field's upper six bits
	ID               uint32 // IPv4 identification (low 16 bits); IPv6: flow label
	Payload          int    // bytes after the transport header
	Data             []byte // those bytes, when set (Payload is then len(Data), Seq not written into UDP's)
	Seq              uint32 // TCP sequence number / UDP first payload word
	BadCsum          bool   // corrupt the IPv4 header checksum
	IPv4HeaderLength int    // 0 = 20
	// TCP only: the acknowledgment number, the flags byte, and the
	// timestamps option (RFC 7323) when TS is set, after two NOPs.
	Ack          uint32
	Flags        uint8
	TS           bool
	TSval, TSecr uint32
}

// TCP flags, as Packet.Flags takes them.
const (
	TCPFin uint8 = 1 << iota
	TCPSyn
	TCPRst
	TCPPsh
	TCPAck
)

// Addresses of a client and a server, IPv4 and IPv6.
var (
	Cli4 = netip.MustParseAddr("10.0.0.1")
	Srv4 = netip.MustParseAddr("10.0.1.1")
	Cli6 = netip.MustParseAddr("fd00::1")
	Srv6 = netip.MustParseAddr("fd00:1::1")
)

// Build returns the IP packet.
func (p Packet) Build() []byte {
	if p.Data != nil {
		p.Payload = len(p.Data)
	}
	thl := 8
	if p.Proto == 6 {
		thl = 20
		if p.TS {
			thl = 32
		}
	}
	var b []byte
	var l4 int
	if p.Src.Is4() {
		hl := p.IPv4HeaderLength
		if hl == 0 {
			hl = 20
		}
		b = make([]byte, hl+thl+p.Payload)
		b[0] = 0x40 | byte(hl/4)
		b[1] = p.DSCP<<2 | byte(p.ECN)
		binary.BigEndian.PutUint16(b[2:], uint16(len(b)))
		binary.BigEndian.PutUint16(b[4:], uint16(p.ID))
		b[6] = 0x40 // DF
		b[8] = 64
		b[9] = p.Proto
		s, d := p.Src.As4(), p.Dst.As4()
		copy(b[12:], s[:])
		copy(b[16:], d[:])
		for i := 20; i < hl; i++ {
			b[i] = 1 // NOP options
		}
		binary.BigEndian.PutUint16(b[10:], IPv4Checksum(b[:hl]))
		if p.BadCsum {
			b[10] ^= 0x5a
		}
		l4 = hl
	} else {
		b = make([]byte, 40+thl+p.Payload)
		binary.BigEndian.PutUint32(b[0:], 6<<28|uint32(p.DSCP<<2|byte(p.ECN))<<20|p.ID&0xfffff)
		binary.BigEndian.PutUint16(b[4:], uint16(thl+p.Payload))
		b[6] = p.Proto
		b[7] = 64
		s, d := p.Src.As16(), p.Dst.As16()
		copy(b[8:], s[:])
		copy(b[24:], d[:])
		l4 = 40
	}
	binary.BigEndian.PutUint16(b[l4:], p.SPort)
	binary.BigEndian.PutUint16(b[l4+2:], p.DPort)
	if p.Proto == 6 {
		binary.BigEndian.PutUint32(b[l4+4:], p.Seq)
		binary.BigEndian.PutUint32(b[l4+8:], p.Ack)
		b[l4+12] = byte(thl/4) << 4
		b[l4+13] = p.Flags
		if p.TS {
			binary.BigEndian.PutUint32(b[l4+20:], 0x0101080a)
			binary.BigEndian.PutUint32(b[l4+24:], p.TSval)
			binary.BigEndian.PutUint32(b[l4+28:], p.TSecr)
		}
	} else {
		binary.BigEndian.PutUint16(b[l4+4:], uint16(thl+p.Payload))
		if p.Payload >= 4 {
			binary.BigEndian.PutUint32(b[l4+8:], p.Seq)
		}
	}
	copy(b[l4+thl:], p.Data)
	return b
}

// IPv4Checksum computes the header checksum with the checksum field
// taken as zero.
func IPv4Checksum(h []byte) uint16 {
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

// SetCE marks a built packet CE and fixes the IPv4 checksum, as the hop does.
func SetCE(b []byte) []byte { return SetECN(b, aqm.CE) }

// SetECN returns a copy of a built packet with its ECN field e and the
// IPv4 checksum fixed: a mark, or a path that bleaches or re-marks.
func SetECN(b []byte, e aqm.ECN) []byte {
	out := append([]byte(nil), b...)
	if out[0]>>4 == 4 {
		out[1] = out[1]&^3 | byte(e)
		hl := int(out[0]&0xf) * 4
		binary.BigEndian.PutUint16(out[10:], IPv4Checksum(out[:hl]))
	} else {
		out[1] = out[1]&^0x30 | byte(e)<<4
	}
	return out
}
