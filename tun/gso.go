package tun

import "encoding/binary"

// Splitting what an offload TUN reads. With TSO/USO on, the kernel hands
// the device a TCP or UDP super-packet of up to 64 KiB: one IP and L4
// header, the payload of many segments, and in the vnet header the segment
// size (gso_size) and where the partial checksum starts. We cut it into
// the packets the kernel would have sent had the device not offered TSO,
// as tcp_gso_segment, __udp_gso_segment and inet_gso_segment do:
//
//   - IPv4: total length per segment, ID incremented per segment (the
//     kernel's default when the stack did not ask for fixed IDs), header
//     checksum recomputed. IPv6: payload length per segment.
//   - TCP: sequence number advanced by the payload before it; FIN and PSH
//     only on the last segment, CWR only on the first.
//   - UDP: each segment one datagram, its length field set.
//   - TCP/UDP checksum computed in full over each segment, so that every
//     segment is a valid packet on its own: for the AQM, the capture, and a
//     device without offloads. Or, for a reader that asks (TryReadPartial),
//     left partial as the kernel gave it, when the segment is to go back
//     to a TUN that takes it so (WritePartial).
//
// Headers are checked before anything is cut: a packet whose vnet header,
// IP header or L4 header disagree with each other or with its length is
// dropped and counted, never split on a guess.

// dropReason says why a packet read from an offload TUN was dropped.
type dropReason uint8

const (
	dropNone    dropReason = iota
	dropVnet               // vnet header inconsistent (GSO type, checksum offsets, flags)
	dropHeaders            // IP or L4 header inconsistent with the vnet header or the length
	dropGSOSize            // gso_size zero, or no payload to cut
	dropTooBig             // a packet or segment larger than the buffer it must go into
	numDropReasons
)

// TCP header flags (byte 13).
const (
	tcpFIN = 0x01
	tcpSYN = 0x02
	tcpRST = 0x04
	tcpPSH = 0x08
	tcpACK = 0x10
	tcpURG = 0x20
	tcpECE = 0x40
	tcpCWR = 0x80
)

const (
	protoTCP = 6
	protoUDP = 17
)

// splitter holds one super-packet being cut, so that a batch too short for
// all its segments leaves the rest for the next read.
type splitter struct {
	pkt     []byte // the super-packet from its IP header on; nil when idle
	gsoSize int
	l3      int // IP header length
	hl      int // IP + L4 header length
	v6, udp bool
	addrSum uint64 // pseudo-header sum of the two addresses
	seq0    uint32 // TCP: first segment's sequence number
	id0     uint16 // IPv4: first segment's ID
	off     int    // where the next segment's payload starts in pkt
	seg     int    // the next segment's index
}

func (s *splitter) pending() bool { return s.pkt != nil }
func (s *splitter) reset()        { s.pkt = nil }

// start checks super-packet pkt against its vnet header h and prepares to
// cut it. pkt must stay untouched until the last segment is out.
func (s *splitter) start(h *vnetHdr, pkt []byte) dropReason {
	s.pkt = nil
	if h.flags&vnetNeedsCsum == 0 {
		return dropVnet // a GSO packet always leaves the stack with a partial checksum
	}
	var proto uint8
	var wantV6, anyIP bool
	switch h.gsoType &^ gsoECN {
	case gsoTCPv4:
		proto = protoTCP
	case gsoTCPv6:
		proto, wantV6 = protoTCP, true
	case gsoUDPL4:
		proto, anyIP = protoUDP, true
		if h.gsoType&gsoECN != 0 {
			return dropVnet // the ECN flag is about TCP's CWR
		}
	default:
		return dropVnet // UFO (fragmenting UDP) is never offered, so never expected
	}
	if len(pkt) < 20 {
		return dropHeaders
	}
	var l3 int
	switch pkt[0] >> 4 {
	case 4:
		if wantV6 && !anyIP {
			return dropHeaders
		}
		l3 = int(pkt[0]&0xf) * 4
		if l3 < 20 || l3 > len(pkt) ||
			int(binary.BigEndian.Uint16(pkt[2:])) != len(pkt) ||
			binary.BigEndian.Uint16(pkt[6:])&0x3fff != 0 || // MF or a fragment offset
			pkt[9] != proto {
			return dropHeaders
		}
		s.v6 = false
		s.addrSum = sum(pkt[12:20], 0)
		s.id0 = binary.BigEndian.Uint16(pkt[4:])
	case 6:
		if !wantV6 && !anyIP {
			return dropHeaders
		}
		// Extension headers would sit between the two; the kernel does
		// not build TSO packets with them on a TUN, and we do not guess.
		l3 = 40
		if len(pkt) < 40 || int(binary.BigEndian.Uint16(pkt[4:])) != len(pkt)-40 || pkt[6] != proto {
			return dropHeaders
		}
		s.v6 = true
		s.addrSum = sum(pkt[8:40], 0)
	default:
		return dropHeaders
	}
	if int(h.csumStart) != l3 {
		return dropVnet
	}
	l4 := 8
	if proto == protoTCP {
		if h.csumOffset != 16 {
			return dropVnet
		}
		if len(pkt) < l3+20 {
			return dropHeaders
		}
		l4 = int(pkt[l3+12]>>4) * 4
		if l4 < 20 || l3+l4 > len(pkt) {
			return dropHeaders
		}
		s.seq0 = binary.BigEndian.Uint32(pkt[l3+4:])
	} else {
		if h.csumOffset != 6 {
			return dropVnet
		}
		if len(pkt) < l3+8 {
			return dropHeaders
		}
	}
	if h.gsoSize == 0 || len(pkt) == l3+l4 {
		return dropGSOSize
	}
	s.pkt, s.gsoSize, s.l3, s.hl, s.udp = pkt, int(h.gsoSize), l3, l3+l4, proto == protoUDP
	s.off, s.seg = s.hl, 0
	return dropNone
}

// next writes the next segment into out and returns its length. If it does
// not fit, the rest of the super-packet is abandoned (dropTooBig). With
// partial, the segment's TCP/UDP checksum is left as the kernel handed it
// over, the pseudo-header sum in the field (CHECKSUM_PARTIAL from the L4
// header on), for a writer that hands it on the same way (WritePartial);
// otherwise it is computed in full.
func (s *splitter) next(out []byte, partial bool) (int, dropReason) {
	p, hl, l3 := s.pkt, s.hl, s.l3
	end := min(s.off+s.gsoSize, len(p))
	n := hl + end - s.off
	if n > len(out) {
		s.reset()
		return 0, dropTooBig
	}
	out = out[:n]
	copy(out, p[:hl])
	copy(out[hl:], p[s.off:end])
	last := end == len(p)
	if s.v6 {
		binary.BigEndian.PutUint16(out[4:], uint16(n-40))
	} else {
		binary.BigEndian.PutUint16(out[2:], uint16(n))
		binary.BigEndian.PutUint16(out[4:], s.id0+uint16(s.seg))
		binary.BigEndian.PutUint16(out[10:], ipv4HeaderChecksum(out[:l3]))
	}
	l4 := out[l3:]
	var field int
	if s.udp {
		binary.BigEndian.PutUint16(l4[4:], uint16(n-l3))
		field = 6
	} else {
		binary.BigEndian.PutUint32(l4[4:], s.seq0+uint32(s.off-hl))
		if !last {
			l4[13] &^= tcpFIN | tcpPSH
		}
		if s.seg > 0 {
			l4[13] &^= tcpCWR
		}
		field = 16
	}
	proto := uint8(protoTCP)
	if s.udp {
		proto = protoUDP
	}
	pseudo := addCarry(s.addrSum, uint64(proto)+uint64(n-l3))
	if partial {
		binary.BigEndian.PutUint16(l4[field:], fold(pseudo))
	} else {
		l4[field], l4[field+1] = 0, 0
		binary.BigEndian.PutUint16(l4[field:], l4Checksum(pseudo, l4))
	}
	s.off = end
	s.seg++
	if last {
		s.reset()
	}
	return n, dropNone
}

// completeChecksum finishes the partial checksum of a single packet read
// with NEEDS_CSUM, as skb_checksum_help would before a device without
// checksum offload: the field holds the pseudo-header sum, and the sum from
// csum_start to the end of the packet, complemented, replaces it.
func completeChecksum(h *vnetHdr, pkt []byte) dropReason {
	start, field := int(h.csumStart), int(h.csumStart)+int(h.csumOffset)
	if field+2 > len(pkt) || start < 20 {
		return dropVnet
	}
	c := ^fold(sum(pkt[start:], 0))
	if c == 0 {
		c = 0xffff // CSUM_MANGLED_0, as the kernel writes it
	}
	binary.BigEndian.PutUint16(pkt[field:], c)
	return dropNone
}

// CompleteChecksum finishes the TCP/UDP checksum of a segment that
// TryReadPartial left partial (the pseudo-header sum in the field, its
// coverage from the L4 header on), as skb_checksum_help would: for a
// capture or a device that takes only complete packets. It reports false,
// and changes nothing, for a packet that is not IPv4/IPv6 (without
// extension headers) carrying TCP or UDP, which TryReadPartial never
// leaves partial.
func CompleteChecksum(pkt []byte) bool {
	h, ok := partialVnet(pkt)
	if !ok {
		return false
	}
	return completeChecksum(&h, pkt) == dropNone
}

// partialVnet is the vnet header that hands pkt on with its checksum
// partial (NEEDS_CSUM from the L4 header), and false if pkt is not a
// TCP/UDP packet the splitter could have left so.
func partialVnet(pkt []byte) (vnetHdr, bool) {
	h := vnetHdr{flags: vnetNeedsCsum}
	if len(pkt) < 20 {
		return h, false
	}
	var l3 int
	var proto uint8
	switch pkt[0] >> 4 {
	case 4:
		l3, proto = int(pkt[0]&0xf)*4, pkt[9]
	case 6:
		l3, proto = 40, pkt[6]
	default:
		return h, false
	}
	switch proto {
	case protoTCP:
		h.csumOffset = 16
	case protoUDP:
		h.csumOffset = 6
	default:
		return h, false
	}
	if l3 < 20 || l3+int(h.csumOffset)+2 > len(pkt) {
		return h, false
	}
	h.csumStart = uint16(l3)
	return h, true
}
