package aqm

import "encoding/binary"

// Header is the IP header of a raw packet as a TUN device delivers it: an
// IPv4 (RFC 791) or IPv6 (RFC 8200) header at offset 0, over the whole
// packet (Valid checks its length, FlowHash reads the ports after it). Its
// accessors are for the hot path: no allocation, every access
// bounds-checked, no panic on any input. Anything that is not a
// well-formed header reads as Not-ECT: such packets are Classic,
// forwarded as is (docs/design.md, the data path).
//
//	IPv4:  0      4      8          14  16                      31
//	       |Ver=4 | IHL  |  DSCP    |ECN|     Total Length        |
//	       ... TTL(8) Protocol(9) Header Checksum(10..11)
//	       Source(12..15) Destination(16..19) [options]
//
//	IPv6:  |Ver=6 | Traffic Class (DSCP,ECN) | Flow Label (20)   |
//	       Payload Length(4..5) Next Header(6) Hop Limit(7)
//	       Source(8..23) Destination(24..39)
type Header []byte

const (
	ipv4MinHeader = 20
	ipv6Header    = 40
)

// Valid reports whether v starts with a well-formed IPv4 header (version
// 4, IHL >= 5, IHL*4 <= total length <= len(v)) or IPv6 header (version 6,
// 40 + payload length <= len(v)). Trailing bytes beyond the IP total
// length (link padding) are allowed.
func (v Header) Valid() bool { return v.Version() != 0 }

// Version returns 4 or 6 for a valid header and 0 otherwise.
func (v Header) Version() int {
	if len(v) == 0 {
		return 0
	}
	switch v[0] >> 4 {
	case 4:
		if len(v) < ipv4MinHeader {
			return 0
		}
		ihl := int(v[0]&0x0f) * 4
		total := int(binary.BigEndian.Uint16(v[2:4]))
		if ihl >= ipv4MinHeader && total >= ihl && total <= len(v) {
			return 4
		}
	case 6:
		if len(v) < ipv6Header {
			return 0
		}
		if ipv6Header+int(binary.BigEndian.Uint16(v[4:6])) <= len(v) {
			return 6
		}
	}
	return 0
}

// ECN returns the header's ECN codepoint, NotECT when v is not valid.
func (v Header) ECN() ECN { return v.ecn(v.Version()) }

func (v Header) ecn(version int) ECN { return ECN(v.dsfield(version) & 3) }

// DSCP returns the header's DSCP (RFC 2474), 0 when v is not valid.
func (v Header) DSCP() uint8 { return v.dsfield(v.Version()) >> 2 }

// dsfield is the IPv4 TOS byte or the IPv6 Traffic Class (DSCP and ECN).
func (v Header) dsfield(version int) uint8 {
	switch version {
	case 4:
		return v[1]
	case 6:
		return v[0]<<4 | v[1]>>4
	}
	return 0
}

// SetCE sets the ECN field to CE (RFC 3168 §5) and reports whether the
// packet now carries CE. ECT(0), ECT(1) and CE succeed (CE stays CE, as
// the kernel's INET_ECN_set_ce, which the kernel counts as a mark);
// Not-ECT and invalid headers are left untouched and give false: Not-ECT
// is never marked (RFC 9331 §5.1). For IPv4 the header checksum is updated
// incrementally (RFC 1624 eqn. 3); IPv6 has no header checksum.
func (v Header) SetCE() bool {
	switch v.Version() {
	case 4:
		old := binary.BigEndian.Uint16(v[0:2])
		if old&3 == uint16(NotECT) {
			return false
		}
		if old&3 != uint16(CE) {
			v[1] |= byte(CE)
			sum := binary.BigEndian.Uint16(v[10:12])
			binary.BigEndian.PutUint16(v[10:12], checksumReplace(sum, old, old|uint16(CE)))
		}
		return true
	case 6:
		if (v[1]>>4)&3 == byte(NotECT) {
			return false
		}
		v[1] |= byte(CE) << 4
		return true
	}
	return false
}

// DSField returns the whole DS field (DSCP and ECN, the IPv4 TOS byte or
// the IPv6 Traffic Class), 0 when v is not valid.
func (v Header) DSField() uint8 { return v.dsfield(v.Version()) }

// SetDSField rewrites the whole DS field (DSCP and ECN) and reports
// whether v is a valid header it could write. It is what a middlebox that
// re-marks or bleaches does, so unlike SetCE any codepoint may become any
// other. For IPv4 the header checksum is updated incrementally (RFC 1624
// eqn. 3), as for SetCE; IPv6 has no header checksum.
func (v Header) SetDSField(ds uint8) bool {
	switch v.Version() {
	case 4:
		old := binary.BigEndian.Uint16(v[0:2])
		if uint8(old) == ds {
			return true
		}
		v[1] = ds
		sum := binary.BigEndian.Uint16(v[10:12])
		binary.BigEndian.PutUint16(v[10:12], checksumReplace(sum, old, binary.BigEndian.Uint16(v[0:2])))
		return true
	case 6:
		v[0] = v[0]&0xf0 | ds>>4
		v[1] = v[1]&0x0f | ds<<4
		return true
	}
	return false
}

// checksumReplace returns the Internet checksum hc updated for one 16-bit
// word changing from old to new: HC' = ~(~HC + ~m + m') (RFC 1624 eqn. 3),
// which, unlike eqn. 2, never yields 0x0000 where a full recompute would
// give 0xFFFF.
func checksumReplace(hc, old, new uint16) uint16 {
	sum := uint32(^hc) + uint32(^old) + uint32(new)
	sum = sum&0xffff + sum>>16
	sum = sum&0xffff + sum>>16
	return ^uint16(sum)
}

// Len returns the IP total length from the header (IPv6: 40 + payload
// length; a jumbogram's zero payload length gives 40), 0 if not valid.
func (v Header) Len() int {
	switch v.Version() {
	case 4:
		return int(binary.BigEndian.Uint16(v[2:4]))
	case 6:
		return ipv6Header + int(binary.BigEndian.Uint16(v[4:6]))
	}
	return 0
}

// FlowHash returns a hash of the 5-tuple: addresses, protocol and, for
// TCP, UDP, UDP-Lite, SCTP and DCCP, the ports when the transport header's
// first four bytes are inside the packet (and, for IPv4, the packet is not
// a non-first fragment). IPv6 extension headers are not walked: the first
// Next Header is the protocol, and ports are taken only when it names one
// of those transports directly. The hash is directional; 0 for invalid input.
func (v Header) FlowHash() uint32 { return v.flowHash(v.Version(), 0) }

// FlowHashKeyed is FlowHash with key mixed into the hash's initial state,
// as the kernel keys its flow dissector's hash with a random value per
// boot: which flows share a bucket then depends on the key. Key 0 gives
// FlowHash.
func (v Header) FlowHashKeyed(key uint32) uint32 { return v.flowHash(v.Version(), key) }

// flowHashInit is the hash's initial state before the key is mixed in.
const flowHashInit = 0x2f1a5e37

func (v Header) flowHash(version int, key uint32) uint32 {
	h := flowHashInit ^ key
	switch version {
	case 4:
		ihl := int(v[0]&0x0f) * 4
		total := int(binary.BigEndian.Uint16(v[2:4]))
		proto := v[9]
		h = hashWord(h, binary.BigEndian.Uint32(v[12:16]))
		h = hashWord(h, binary.BigEndian.Uint32(v[16:20]))
		h = hashWord(h, uint32(proto))
		fragOffset := binary.BigEndian.Uint16(v[6:8]) & 0x1fff
		if hasPorts(proto) && fragOffset == 0 && ihl+4 <= total {
			h = hashWord(h, binary.BigEndian.Uint32(v[ihl:ihl+4]))
		}
	case 6:
		for i := 8; i < ipv6Header; i += 4 {
			h = hashWord(h, binary.BigEndian.Uint32(v[i:i+4]))
		}
		proto := v[6]
		h = hashWord(h, uint32(proto))
		end := ipv6Header + int(binary.BigEndian.Uint16(v[4:6]))
		if hasPorts(proto) && ipv6Header+4 <= end {
			h = hashWord(h, binary.BigEndian.Uint32(v[ipv6Header:ipv6Header+4]))
		}
	default:
		return 0
	}
	return finalizeHash(h)
}

// flowHash2 is flowHash with key 0 and with key, in one pass over the
// header: the two chains are independent and share each word's
// scrambling (hashWord2), so they cost little more than one.
func (v Header) flowHash2(version int, key uint32) (plain, keyed uint32) {
	h, k := uint32(flowHashInit), flowHashInit^key
	switch version {
	case 4:
		ihl := int(v[0]&0x0f) * 4
		total := int(binary.BigEndian.Uint16(v[2:4]))
		proto := v[9]
		h, k = hashWord2(h, k, binary.BigEndian.Uint32(v[12:16]))
		h, k = hashWord2(h, k, binary.BigEndian.Uint32(v[16:20]))
		h, k = hashWord2(h, k, uint32(proto))
		fragOffset := binary.BigEndian.Uint16(v[6:8]) & 0x1fff
		if hasPorts(proto) && fragOffset == 0 && ihl+4 <= total {
			h, k = hashWord2(h, k, binary.BigEndian.Uint32(v[ihl:ihl+4]))
		}
	case 6:
		for i := 8; i < ipv6Header; i += 4 {
			h, k = hashWord2(h, k, binary.BigEndian.Uint32(v[i:i+4]))
		}
		proto := v[6]
		h, k = hashWord2(h, k, uint32(proto))
		end := ipv6Header + int(binary.BigEndian.Uint16(v[4:6]))
		if hasPorts(proto) && ipv6Header+4 <= end {
			h, k = hashWord2(h, k, binary.BigEndian.Uint32(v[ipv6Header:ipv6Header+4]))
		}
	default:
		return 0, 0
	}
	return finalizeHash(h), finalizeHash(k)
}

// hashWord2 is hashWord of one word into two states: the word's
// scrambling is done once.
func hashWord2(h, k, w uint32) (uint32, uint32) {
	w *= 0xcc9e2d51
	w = w<<15 | w>>17
	w *= 0x1b873593
	h ^= w
	h = h<<13 | h>>19
	k ^= w
	k = k<<13 | k>>19
	return h*5 + 0xe6546b64, k*5 + 0xe6546b64
}

// hasPorts reports whether an IP protocol number's header starts with a
// 16-bit source and destination port.
func hasPorts(proto byte) bool {
	switch proto {
	case 6, 17, 33, 132, 136: // TCP, UDP, DCCP, SCTP, UDP-Lite
		return true
	}
	return false
}

// hashWord mixes one 32-bit word into h (the MurmurHash3 block step).
func hashWord(h, k uint32) uint32 {
	k *= 0xcc9e2d51
	k = k<<15 | k>>17
	k *= 0x1b873593
	h ^= k
	h = h<<13 | h>>19
	return h*5 + 0xe6546b64
}

// finalizeHash spreads every input bit over the result (MurmurHash3 fmix32).
func finalizeHash(h uint32) uint32 {
	h ^= h >> 16
	h *= 0x85ebca6b
	h ^= h >> 13
	h *= 0xc2b2ae35
	h ^= h >> 16
	return h
}

// MetaOf reads what a queue needs from a raw IP packet: Len = len(pkt)
// (what the link serialises), the ECN codepoint and DSCP, the flow hash,
// and the caller's slot. Arrival and Class are left zero (Enqueue stamps the one
// and decides the other).
func MetaOf(pkt []byte, slot int32) Meta {
	v := Header(pkt)
	version := v.Version()
	n := len(pkt)
	if n > 1<<31-1 {
		n = 1<<31 - 1
	}
	ds := v.dsfield(version)
	return Meta{Len: int32(n), Slot: slot, ECN: ECN(ds & 3), DSCP: ds >> 2, Flow: v.flowHash(version, 0)}
}

// MetaOfKeyed is MetaOf that also returns the packet's
// FlowHashKeyed(key) (0 for a packet MetaOf reads as malformed), from the
// same pass over the header.
func MetaOfKeyed(pkt []byte, slot int32, key uint32) (Meta, uint32) {
	v := Header(pkt)
	version := v.Version()
	n := len(pkt)
	if n > 1<<31-1 {
		n = 1<<31 - 1
	}
	ds := v.dsfield(version)
	plain, keyed := v.flowHash2(version, key)
	return Meta{Len: int32(n), Slot: slot, ECN: ECN(ds & 3), DSCP: ds >> 2, Flow: plain}, keyed
}

// Checksum is the Internet checksum of b (RFC 1071): the ones' complement
// of the ones' complement sum of its 16-bit words. Over an IPv4 header
// whose checksum field is zero it gives the value to store there; over a
// header as received it gives 0 when the header is intact. The hot path
// never calls it: SetCE updates the checksum incrementally (RFC 1624).
func Checksum(b []byte) uint16 {
	var sum uint32
	for i := 0; i+1 < len(b); i += 2 {
		sum += uint32(b[i])<<8 | uint32(b[i+1])
	}
	if len(b)%2 == 1 {
		sum += uint32(b[len(b)-1]) << 8
	}
	for sum > 0xffff {
		sum = sum&0xffff + sum>>16
	}
	return ^uint16(sum)
}
