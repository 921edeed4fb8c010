package analyze

import (
	"encoding/binary"
	"hash/maphash"
	"net/netip"

	"github.com/pi2hop/pi2hop/aqm"
)

// Offline decoding of IP headers by hand: captures are read at millions
// of packets per run, and only a few header fields matter.

// FlowKey is a 5-tuple. Ports are 0 for protocols without them and for
// non-first fragments.
type FlowKey struct {
	Proto   uint8
	Src     netip.Addr
	Dst     netip.Addr
	SrcPort uint16
	DstPort uint16
}

// ipHeader is what analysis needs of one IP packet.
type ipHeader struct {
	version  uint8
	ecn      aqm.ECN
	tos      uint8 // the whole ToS / Traffic Class byte, ECN included
	flow     FlowKey
	totalLen int    // from the header
	ident    uint32 // IPv4 identification, IPv6 flow label
	// csumChecked is true for IPv4 headers captured in full; csumOK then
	// says whether the header checksum is right.
	csumChecked, csumOK bool
	l4                  int // offset of the transport header (or payload)
	captured            int // bytes captured of the IP packet
}

// decodeIP reads an IPv4 or IPv6 header. ok is false when b is too short
// for the fixed header or the version is neither.
func decodeIP(b []byte) (h ipHeader, ok bool) {
	if len(b) < 1 {
		return h, false
	}
	h.captured = len(b)
	switch b[0] >> 4 {
	case 4:
		if len(b) < 20 {
			return h, false
		}
		ihl := int(b[0]&0xf) * 4
		if ihl < 20 {
			return h, false
		}
		h.version = 4
		h.ecn = aqm.ECN(b[1] & 3)
		h.tos = b[1]
		h.totalLen = int(binary.BigEndian.Uint16(b[2:]))
		h.ident = uint32(binary.BigEndian.Uint16(b[4:]))
		h.flow.Proto = b[9]
		h.flow.Src = netip.AddrFrom4([4]byte(b[12:16]))
		h.flow.Dst = netip.AddrFrom4([4]byte(b[16:20]))
		if len(b) >= ihl {
			h.csumChecked = true
			h.csumOK = aqm.Checksum(b[:ihl]) == 0
		}
		h.l4 = ihl
		firstFragment := binary.BigEndian.Uint16(b[6:])&0x1fff == 0
		if firstFragment {
			h.ports(b)
		}
	case 6:
		if len(b) < 40 {
			return h, false
		}
		h.version = 6
		w := binary.BigEndian.Uint32(b[0:])
		h.ecn = aqm.ECN(w >> 20 & 3)
		h.tos = uint8(w >> 20)
		h.ident = w & 0xfffff
		h.totalLen = 40 + int(binary.BigEndian.Uint16(b[4:]))
		h.flow.Src = netip.AddrFrom16([16]byte(b[8:24]))
		h.flow.Dst = netip.AddrFrom16([16]byte(b[24:40]))
		next, off := b[6], 40
		// Walk the extension headers we know, as far as captured.
	walk:
		for range 8 {
			switch next {
			case 0, 43, 60: // hop-by-hop, routing, destination options
				if len(b) < off+2 {
					break walk
				}
				next, off = b[off], off+8+int(b[off+1])*8
			case 44: // fragment: ports only in the first one
				if len(b) < off+8 {
					break walk
				}
				if binary.BigEndian.Uint16(b[off+2:])&0xfff8 != 0 {
					next, off = b[off], -1
					break walk
				}
				next, off = b[off], off+8
			default:
				break walk
			}
		}
		h.flow.Proto = next
		if off > 0 && off <= len(b) {
			h.l4 = off
			h.ports(b)
		} else {
			h.l4 = len(b)
		}
	default:
		return h, false
	}
	return h, true
}

// ports reads the transport ports when the protocol has them.
func (h *ipHeader) ports(b []byte) {
	switch h.flow.Proto {
	case 6, 17, 132, 136, 33: // TCP, UDP, SCTP, UDP-Lite, DCCP
		if len(b) >= h.l4+4 {
			h.flow.SrcPort = binary.BigEndian.Uint16(b[h.l4:])
			h.flow.DstPort = binary.BigEndian.Uint16(b[h.l4+2:])
		}
	}
}

// matchWindow is how many bytes after the IP header identify a packet
// across capture points; 40 covers a TCP header with its timestamps.
const matchWindow = 40

// l4ChecksumAt is where the checksum sits in a TCP or UDP header (0: none).
func l4ChecksumAt(proto uint8) int {
	switch proto {
	case 6:
		return 16
	case 17:
		return 6
	}
	return 0
}

// matchKey identifies one packet at an ingress and an egress capture
// point: everything the hop or a router on the way does not change
// (not ECN, TTL, the IPv4 checksum, nor the TCP/UDP checksum, see below).
func (h *ipHeader) matchKey(seed maphash.Seed, b []byte) uint64 {
	var buf [48 + matchWindow]byte
	buf[0] = h.version
	buf[1] = h.flow.Proto
	s, d := h.flow.Src.As16(), h.flow.Dst.As16()
	copy(buf[2:], s[:])
	copy(buf[18:], d[:])
	binary.BigEndian.PutUint16(buf[34:], h.flow.SrcPort)
	binary.BigEndian.PutUint16(buf[36:], h.flow.DstPort)
	binary.BigEndian.PutUint32(buf[38:], h.ident)
	binary.BigEndian.PutUint32(buf[42:], uint32(h.totalLen))
	// Stop at the IP length: Ethernet pads short frames, TUN does not.
	end := min(len(b), h.totalLen)
	n := 48
	if h.l4 < end {
		n += copy(buf[48:], b[h.l4:end])
	}
	// Nor the TCP/UDP checksum: a TUN with checksum offload (the hop's
	// offload backend) hands the kernel's packets over, and tcpdump on it
	// records them, with only the pseudo-header sum in that field; the
	// hop completes it before the packet goes on.
	if f := l4ChecksumAt(h.flow.Proto); f > 0 && 48+f+2 <= n {
		buf[48+f], buf[48+f+1] = 0, 0
	}
	return maphash.Bytes(seed, buf[:n])
}
