package pcap

import (
	"encoding/binary"

	"github.com/gopacket/gopacket/layers"
)

// Link headers are taken off by hand: captures are read at millions of
// packets per run, and only the IP packet inside matters.

// stripLink returns the IP packet inside a frame of link type lt, and
// how many bytes of link header were removed. ok is false for frames that
// do not carry IPv4 or IPv6, and for link types we do not read.
func stripLink(lt layers.LinkType, b []byte) (ip []byte, hdr int, ok bool) {
	switch lt {
	case layers.LinkTypeRaw, layers.LinkTypeIPv4, layers.LinkTypeIPv6, linkTypeRawBSD:
		hdr = 0
	case layers.LinkTypeEthernet:
		hdr = 12
		for {
			if len(b) < hdr+2 {
				return nil, 0, false
			}
			switch binary.BigEndian.Uint16(b[hdr:]) {
			case 0x8100, 0x88a8, 0x9100: // 802.1Q / 802.1ad tags
				hdr += 4
				continue
			case 0x0800, 0x86dd:
				hdr += 2
			default:
				return nil, 0, false
			}
			break
		}
	case layers.LinkTypeLinuxSLL: // 16-byte cooked header, protocol last
		if len(b) < 16 || !isIPEtherType(binary.BigEndian.Uint16(b[14:])) {
			return nil, 0, false
		}
		hdr = 16
	case layers.LinkTypeLinuxSLL2: // 20-byte cooked header, protocol first
		if len(b) < 20 || !isIPEtherType(binary.BigEndian.Uint16(b[0:])) {
			return nil, 0, false
		}
		hdr = 20
	case layers.LinkTypeNull, layers.LinkTypeLoop: // 4-byte address family
		hdr = 4
	default:
		return nil, 0, false
	}
	if len(b) <= hdr {
		return nil, 0, false
	}
	ip = b[hdr:]
	if v := ip[0] >> 4; v != 4 && v != 6 {
		return nil, 0, false
	}
	return ip, hdr, true
}

// linkTypeRawBSD is DLT_RAW's number on OpenBSD (14), found in old files
// that were not mapped to LINKTYPE_RAW (101).
const linkTypeRawBSD layers.LinkType = 14

func isIPEtherType(t uint16) bool { return t == 0x0800 || t == 0x86dd }
