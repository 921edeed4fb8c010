package tun

import "encoding/binary"

// vnetHdr is struct virtio_net_hdr (include/uapi/linux/virtio_net.h), the
// 10 bytes an IFF_VNET_HDR TUN puts before every packet it hands us and
// expects before every packet we write. A TUN uses the host's byte order
// for its fields unless told otherwise (TUNSETVNETLE/BE, which we never
// issue).
type vnetHdr struct {
	flags      uint8
	gsoType    uint8
	hdrLen     uint16 // on read: the length of the skb's linear part, not of the headers
	gsoSize    uint16 // payload bytes per segment
	csumStart  uint16 // where the checksum's coverage starts (the L4 header)
	csumOffset uint16 // where the checksum field is, from csumStart
}

const vnetHdrLen = 10

// virtio_net_hdr flags and GSO types.
const (
	vnetNeedsCsum = 1 // VIRTIO_NET_HDR_F_NEEDS_CSUM: L4 field holds the pseudo-header sum
	vnetDataValid = 2 // VIRTIO_NET_HDR_F_DATA_VALID: the kernel verified the checksum

	gsoNone  = 0    // VIRTIO_NET_HDR_GSO_NONE
	gsoTCPv4 = 1    // VIRTIO_NET_HDR_GSO_TCPV4
	gsoUDP   = 3    // VIRTIO_NET_HDR_GSO_UDP (UFO: IP fragmentation; never offered)
	gsoTCPv6 = 4    // VIRTIO_NET_HDR_GSO_TCPV6
	gsoUDPL4 = 5    // VIRTIO_NET_HDR_GSO_UDP_L4 (USO: one datagram per segment)
	gsoECN   = 0x80 // VIRTIO_NET_HDR_GSO_ECN: the super-packet has CWR set
)

func (h *vnetHdr) decode(b []byte) {
	h.flags = b[0]
	h.gsoType = b[1]
	h.hdrLen = binary.NativeEndian.Uint16(b[2:])
	h.gsoSize = binary.NativeEndian.Uint16(b[4:])
	h.csumStart = binary.NativeEndian.Uint16(b[6:])
	h.csumOffset = binary.NativeEndian.Uint16(b[8:])
}

func (h *vnetHdr) encode(b []byte) {
	b[0] = h.flags
	b[1] = h.gsoType
	binary.NativeEndian.PutUint16(b[2:], h.hdrLen)
	binary.NativeEndian.PutUint16(b[4:], h.gsoSize)
	binary.NativeEndian.PutUint16(b[6:], h.csumStart)
	binary.NativeEndian.PutUint16(b[8:], h.csumOffset)
}

// Offloads is a set of TUN offload flags (TUN_F_* in
// include/uapi/linux/if_tun.h), as given to TUNSETOFFLOAD.
type Offloads uint32

const (
	OffloadCsum Offloads = 0x01 // TUN_F_CSUM: packets may carry partial checksums
	OffloadTSO4 Offloads = 0x02 // TUN_F_TSO4
	OffloadTSO6 Offloads = 0x04 // TUN_F_TSO6
	OffloadUSO4 Offloads = 0x20 // TUN_F_USO4 (Linux 6.2)
	OffloadUSO6 Offloads = 0x40 // TUN_F_USO6 (Linux 6.2)
)

// String lists the flags as ethtool names them, e.g. "csum tso4 tso6".
func (o Offloads) String() string {
	if o == 0 {
		return "none"
	}
	s := ""
	for _, f := range []struct {
		bit  Offloads
		name string
	}{{OffloadCsum, "csum"}, {OffloadTSO4, "tso4"}, {OffloadTSO6, "tso6"}, {OffloadUSO4, "uso4"}, {OffloadUSO6, "uso6"}} {
		if o&f.bit != 0 {
			if s != "" {
				s += " "
			}
			s += f.name
		}
	}
	return s
}
