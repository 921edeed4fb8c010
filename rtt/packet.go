package rtt

import "encoding/binary"

var (
	be = binary.BigEndian
	le = binary.LittleEndian
)

// IP protocol numbers the table times.
const (
	protoICMP   = 1
	protoTCP    = 6
	protoUDP    = 17
	protoICMPv6 = 58
)

// Packet takes one IP packet (IPv4 or IPv6, from its first header byte)
// crossing the hop in direction d at now (ns): it may remember the
// packet, or answer one remembered from the other direction and take a
// sample. It never keeps pkt. Anything it cannot read is counted
// (Stats.Malformed, Stats.Untimed) and otherwise ignored.
func (t *Table) Packet(pkt []byte, d Dir, now int64) { t.Captured(pkt, len(pkt), d, now) }

// Captured is Packet for a packet captured in part: pkt is the first
// bytes of an IP packet of length bytes (as a capture's snap length cuts
// it). What lies beyond pkt is not read; the lengths come from the IP
// header, which must say no more than length.
func (t *Table) Captured(pkt []byte, length int, d Dir, now int64) {
	t.st.Packets++
	var k flowKey
	var l4 []byte // the transport header and payload, as far as captured
	var l4len int // their length on the wire
	switch {
	case len(pkt) >= 20 && pkt[0]>>4 == 4:
		ihl := int(pkt[0]&0x0f) * 4
		total := int(be.Uint16(pkt[2:4]))
		if ihl < 20 || total < ihl || total > length || ihl > len(pkt) {
			t.st.Malformed++
			return
		}
		if be.Uint16(pkt[6:8])&0x1fff != 0 { // a later fragment: no transport header
			t.st.Untimed++
			return
		}
		k.version, k.proto = 4, pkt[9]
		src, dst := uint64(le.Uint32(pkt[12:16])), uint64(le.Uint32(pkt[16:20]))
		if d == Up {
			k.addrs[0], k.addrs[2] = src, dst
		} else {
			k.addrs[0], k.addrs[2] = dst, src
		}
		l4, l4len = pkt[ihl:min(total, len(pkt))], total-ihl
	case len(pkt) >= 40 && pkt[0]>>4 == 6:
		end := 40 + int(be.Uint16(pkt[4:6]))
		if end > length {
			t.st.Malformed++
			return
		}
		k.version, k.proto = 6, pkt[6]
		c, s := 8, 24 // client's and server's address offsets
		if d == Down {
			c, s = s, c
		}
		k.addrs = [4]uint64{le.Uint64(pkt[c:]), le.Uint64(pkt[c+8:]), le.Uint64(pkt[s:]), le.Uint64(pkt[s+8:])}
		l4, l4len = pkt[40:min(end, len(pkt))], end-40
	default:
		t.st.Malformed++
		return
	}
	switch k.proto {
	case protoTCP:
		t.tcp(&k, l4, l4len, d, now)
	case protoUDP:
		t.udp(&k, l4, d, now)
	case protoICMP, protoICMPv6:
		t.icmp(&k, l4, d, now)
	default: // IPv6 extension headers included: not walked
		t.st.Untimed++
	}
}

// orient sets k's ports from a packet's source and destination ports.
func orient(k *flowKey, src, dst uint16, d Dir) {
	if d == Up {
		k.ports = uint32(src)<<16 | uint32(dst)
	} else {
		k.ports = uint32(dst)<<16 | uint32(src)
	}
}
