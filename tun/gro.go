package tun

import (
	"bytes"
	"encoding/binary"
)

// Coalescing what we write to an offload TUN. Consecutive packets of one
// TCP or UDP flow may go to the kernel as one super-packet (one write, one
// pass through its stack), as its own GRO would merge them. The kernel then
// treats the super-packet as the segments it stands for: delivered to a
// socket it counts as them, forwarded it is cut into them again, each with
// the head's IP header. So packets are joined only when that reproduces
// them exactly:
//
//   - IP headers equal except total/payload length, ID and header checksum;
//     ToS / Traffic Class included, so a CE mark on one packet never spreads
//     to its neighbours nor vanishes into them; IPv6 flow label included.
//     IPv4 IDs consecutive (what re-segmenting regenerates), no fragments.
//   - TCP: the same ports, ack, window, options and flags, ACK set; no SYN,
//     RST, FIN, URG or CWR (CWR is the first segment's only, as GRO keeps
//     it); each sequence number where the previous payload ended; PSH only
//     on the last. UDP: the same ports, a non-zero checksum.
//   - Every payload the head's size (the gso_size), but the last, which may
//     be shorter.
//   - Every packet's own checksum verifies. The super-packet goes out with a
//     partial checksum (the kernel does not check those), so a corrupt
//     packet must not be laundered into one: it is written alone, as it
//     came, and the receiver's stack counts its error.

// maxRun bounds the packets in one super-packet (and the iovecs of a write).
const maxRun = 64

// maxSuper is the largest IP packet we build: IPv4's total length field.
const maxSuper = 65535

// segInfo is what coalescing needs of one packet.
type segInfo struct {
	l3, hl int // IP header length, IP + L4 header length
	plen   int // payload length
	v6     bool
	udp    bool
	seq    uint32 // TCP sequence number
	id     uint16 // IPv4 ID
	flags  uint8  // TCP flags
}

// coalescer decides the runs and builds each super-packet's headers.
type coalescer struct {
	tcp4, tcp6, udp4, udp6 bool // which kinds the kernel accepts (TSO/USO per family)

	vh  [vnetHdrLen]byte // vnet header of the super-packet
	hdr [120]byte        // its IP + L4 headers (IPv4 and TCP at most 60 each)
}

// parse returns what coalescing needs of pkt, and false if pkt may not
// join or head a super-packet at all.
func (c *coalescer) parse(pkt []byte) (segInfo, bool) {
	var s segInfo
	if len(pkt) < 28 {
		return s, false
	}
	var proto uint8
	switch pkt[0] >> 4 {
	case 4:
		s.l3 = int(pkt[0]&0xf) * 4
		if s.l3 < 20 || s.l3 > len(pkt) || int(binary.BigEndian.Uint16(pkt[2:])) != len(pkt) ||
			binary.BigEndian.Uint16(pkt[6:])&0x3fff != 0 {
			return s, false
		}
		proto = pkt[9]
		s.id = binary.BigEndian.Uint16(pkt[4:])
	case 6:
		s.l3, s.v6 = 40, true
		if len(pkt) < 48 || int(binary.BigEndian.Uint16(pkt[4:])) != len(pkt)-40 {
			return s, false
		}
		proto = pkt[6]
	default:
		return s, false
	}
	switch proto {
	case protoTCP:
		if !(s.v6 && c.tcp6 || !s.v6 && c.tcp4) || len(pkt) < s.l3+20 {
			return s, false
		}
		l4 := int(pkt[s.l3+12]>>4) * 4
		s.flags = pkt[s.l3+13]
		if l4 < 20 || s.l3+l4 > len(pkt) ||
			s.flags&tcpACK == 0 || s.flags&(tcpSYN|tcpRST|tcpFIN|tcpURG|tcpCWR) != 0 {
			return s, false
		}
		s.hl = s.l3 + l4
		s.seq = binary.BigEndian.Uint32(pkt[s.l3+4:])
	case protoUDP:
		if !(s.v6 && c.udp6 || !s.v6 && c.udp4) {
			return s, false
		}
		s.udp, s.hl = true, s.l3+8
		u := pkt[s.l3:]
		if int(binary.BigEndian.Uint16(u[4:])) != len(pkt)-s.l3 || binary.BigEndian.Uint16(u[6:]) == 0 {
			return s, false
		}
	default:
		return s, false
	}
	s.plen = len(pkt) - s.hl
	return s, s.plen > 0
}

// follows reports whether packet q (described by qi) may come right after
// prev (described by pi) in a super-packet headed by head (hi).
func follows(head []byte, hi segInfo, prev segInfo, q []byte, qi segInfo) bool {
	if qi.v6 != hi.v6 || qi.udp != hi.udp || qi.hl != hi.hl || qi.l3 != hi.l3 || qi.plen > hi.plen {
		return false
	}
	if prev.plen < hi.plen {
		return false // only the last payload may be short
	}
	l3 := hi.l3
	if hi.v6 {
		// Version, traffic class, flow label; next header, hop limit, addresses.
		if !bytes.Equal(head[0:4], q[0:4]) || !bytes.Equal(head[6:40], q[6:40]) {
			return false
		}
	} else {
		// Version/IHL and ToS; flags/offset, TTL, protocol; addresses and options.
		if head[0] != q[0] || head[1] != q[1] || !bytes.Equal(head[6:10], q[6:10]) ||
			!bytes.Equal(head[12:l3], q[12:l3]) || qi.id != prev.id+1 {
			return false
		}
	}
	h4, q4 := head[l3:hi.hl], q[l3:qi.hl]
	if hi.udp {
		return h4[0] == q4[0] && h4[1] == q4[1] && h4[2] == q4[2] && h4[3] == q4[3]
	}
	// Ports; ack, data offset, flags but PSH, window, urgent pointer;
	// options. Sequence numbers must follow on, and nothing may follow PSH.
	return bytes.Equal(h4[0:4], q4[0:4]) && bytes.Equal(h4[8:13], q4[8:13]) &&
		(h4[13]|tcpPSH) == (q4[13]|tcpPSH) && bytes.Equal(h4[14:16], q4[14:16]) &&
		bytes.Equal(h4[18:], q4[18:]) &&
		prev.flags&tcpPSH == 0 && qi.seq == prev.seq+uint32(prev.plen)
}

// checksumOK verifies pkt's TCP/UDP checksum.
func checksumOK(pkt []byte, s segInfo) bool {
	proto := uint8(protoTCP)
	if s.udp {
		proto = protoUDP
	}
	return fold(sum(pkt[s.l3:], l4Pseudo(pkt, s, proto, len(pkt)-s.l3))) == 0xffff
}

// l4Pseudo is the pseudo-header sum for pkt's addresses with L4 length n.
func l4Pseudo(pkt []byte, s segInfo, proto uint8, n int) uint64 {
	if s.v6 {
		return pseudoSum(pkt[8:24], pkt[24:40], proto, n)
	}
	return pseudoSum(pkt[12:16], pkt[16:20], proto, n)
}

// run returns how many packets from the start of pkts go out in the next
// write. When that is more than one, c.vh and c.hdr[:hl] hold the
// super-packet's vnet header and headers, and each packet's payload
// (pkts[i][hl:]) follows them. partial, if not nil, says which packets
// carry a partial checksum (the splitter's own segments, see
// WritePartial): those are not verified, there being nothing to verify.
func (c *coalescer) run(pkts [][]byte, partial []bool) (n, hl int) {
	if len(pkts) < 2 {
		return len(pkts), 0
	}
	head := pkts[0]
	hi, ok := c.parse(head)
	if !ok {
		return 1, 0
	}
	total, prev := len(head), hi
	n = 1
	for n < len(pkts) && n < maxRun {
		q := pkts[n]
		qi, ok := c.parse(q)
		if !ok || total+qi.plen > maxSuper || !follows(head, hi, prev, q, qi) {
			break
		}
		if n == 1 && !(partial != nil && partial[0]) && !checksumOK(head, hi) {
			return 1, 0
		}
		if !(partial != nil && partial[n]) && !checksumOK(q, qi) {
			break
		}
		total += qi.plen
		prev = qi
		n++
	}
	if n == 1 {
		return 1, 0
	}
	c.build(head, hi, prev, total)
	return n, hi.hl
}

// build writes the super-packet's headers: head's, with the length of the
// whole, the last packet's PSH, and the pseudo-header sum in the checksum
// field for the kernel to complete (NEEDS_CSUM from csum_start).
func (c *coalescer) build(head []byte, hi, last segInfo, total int) {
	h := c.hdr[:hi.hl]
	copy(h, head[:hi.hl])
	if hi.v6 {
		binary.BigEndian.PutUint16(h[4:], uint16(total-40))
	} else {
		binary.BigEndian.PutUint16(h[2:], uint16(total))
		binary.BigEndian.PutUint16(h[10:], ipv4HeaderChecksum(h[:hi.l3]))
	}
	l4 := h[hi.l3:]
	vh := vnetHdr{flags: vnetNeedsCsum, hdrLen: uint16(hi.hl), gsoSize: uint16(hi.plen), csumStart: uint16(hi.l3)}
	var proto uint8
	if hi.udp {
		proto, vh.gsoType, vh.csumOffset = protoUDP, gsoUDPL4, 6
		binary.BigEndian.PutUint16(l4[4:], uint16(total-hi.l3))
	} else {
		proto, vh.gsoType, vh.csumOffset = protoTCP, gsoTCPv4, 16
		if hi.v6 {
			vh.gsoType = gsoTCPv6
		}
		l4[13] = l4[13]&^tcpPSH | last.flags&tcpPSH
	}
	binary.BigEndian.PutUint16(l4[vh.csumOffset:], fold(l4Pseudo(head, hi, proto, total-hi.l3)))
	vh.encode(c.vh[:])
}
