package rtt

import (
	"encoding/binary"
	"net/netip"
)

// pkt describes a test packet; build writes it as the hop would see it.
type pkt struct {
	v6           bool
	src, dst     string // addresses; empty: client or server by dir
	proto        uint8
	sport, dport uint16
	flags        byte
	seq, ack     uint32
	ts           bool // carry the timestamps option
	tsval, tsecr uint32
	payload      int
	udp          []byte // UDP payload, or ICMP body after type/code/csum
	icmpType     byte
	id, icmpSeq  uint16
}

var (
	cli4, srv4 = "10.0.0.1", "10.0.1.1"
	cli6, srv6 = "fd00::1", "fd00:1::1"
)

// build returns p's bytes for direction d: the client is the source going up.
func (p pkt) build(d Dir) []byte {
	cli, srv := cli4, srv4
	if p.v6 {
		cli, srv = cli6, srv6
	}
	src, dst := cli, srv
	sport, dport := p.sport, p.dport
	if d == Down {
		src, dst = srv, cli
		sport, dport = dport, sport
	}
	if p.src != "" {
		src, dst = p.src, p.dst
	}
	var l4 []byte
	be := binary.BigEndian
	switch p.proto {
	case 6:
		hl := 20
		if p.ts {
			hl = 32
		}
		l4 = make([]byte, hl+p.payload)
		be.PutUint16(l4[0:], sport)
		be.PutUint16(l4[2:], dport)
		be.PutUint32(l4[4:], p.seq)
		be.PutUint32(l4[8:], p.ack)
		l4[12] = byte(hl/4) << 4
		l4[13] = p.flags
		if p.ts {
			be.PutUint32(l4[20:], 0x0101080a)
			be.PutUint32(l4[24:], p.tsval)
			be.PutUint32(l4[28:], p.tsecr)
		}
	case 17:
		l4 = make([]byte, 8+len(p.udp))
		be.PutUint16(l4[0:], sport)
		be.PutUint16(l4[2:], dport)
		be.PutUint16(l4[4:], uint16(len(l4)))
		copy(l4[8:], p.udp)
	default:
		l4 = make([]byte, 8+len(p.udp))
		l4[0] = p.icmpType
		be.PutUint16(l4[4:], p.id)
		be.PutUint16(l4[6:], p.icmpSeq)
		copy(l4[8:], p.udp)
	}
	s, t := netip.MustParseAddr(src), netip.MustParseAddr(dst)
	if s.Is4() {
		b := make([]byte, 20, 20+len(l4))
		b[0] = 0x45
		be.PutUint16(b[2:], uint16(20+len(l4)))
		b[8], b[9] = 64, p.proto
		s4, t4 := s.As4(), t.As4()
		copy(b[12:], s4[:])
		copy(b[16:], t4[:])
		return append(b, l4...)
	}
	b := make([]byte, 40, 40+len(l4))
	b[0] = 0x60
	be.PutUint16(b[4:], uint16(len(l4)))
	b[6], b[7] = p.proto, 64
	s16, t16 := s.As16(), t.As16()
	copy(b[8:], s16[:])
	copy(b[24:], t16[:])
	return append(b, l4...)
}
