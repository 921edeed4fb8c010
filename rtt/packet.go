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
// (Stats.Malformed, Stats.Untimed) and otherwise ignored. Packet is
// Parse, then Observe.
func (t *Table) Packet(pkt []byte, d Dir, now int64) { t.Captured(pkt, len(pkt), d, now) }

// Captured is Packet for a packet captured in part: pkt is the first
// bytes of an IP packet of length bytes (as a capture's snap length cuts
// it). What lies beyond pkt is not read; the lengths come from the IP
// header, which must say no more than length.
func (t *Table) Captured(pkt []byte, length int, d Dir, now int64) {
	var r Record
	r.Parse(pkt, length, d)
	t.Observe(&r, now)
}

// Record is what the table needs of one packet, read by Parse: a small
// value that holds no reference to the packet, so that whoever reads
// packets can hand it to the goroutine that owns the table (a hop reads
// each direction on its own goroutine, and one table must see both).
type Record struct {
	key    flowKey
	kind   kind
	dir    Dir
	flags  uint8 // TCP flags; a QUIC short header's spin bit
	hasTS  bool  // TCP: the timestamps option
	method Method
	seq    uint32 // TCP sequence number; an echo's sequence number
	ack    uint32
	end    uint32 // TCP: the end of the segment's sequence space
	tsval  uint32
	tsecr  uint32
}

// kind is what Parse found a packet to be.
type kind uint8

const (
	kindMalformed kind = iota
	kindUntimed
	kindTCP
	kindRequest // an echo request, probe request or udp_prague DATA
	kindReply   // an echo reply, probe reply or udp_prague ACK
	kindQUICLong
	kindQUICShort
)

// Parse sets r to what it reads of an IP packet (as Captured takes it)
// crossing the hop in direction d. It allocates nothing and keeps nothing
// of pkt. (Filling the caller's record field by field, rather than
// returning one, lets Observe read each field as it was stored.)
func (r *Record) Parse(pkt []byte, length int, d Dir) {
	*r = Record{dir: d}
	var l4 []byte // the transport header and payload, as far as captured
	var l4len int // their length on the wire
	k := &r.key
	switch {
	case len(pkt) >= 20 && pkt[0]>>4 == 4:
		ihl := int(pkt[0]&0x0f) * 4
		total := int(be.Uint16(pkt[2:4]))
		if ihl < 20 || total < ihl || total > length || ihl > len(pkt) {
			return
		}
		if be.Uint16(pkt[6:8])&0x1fff != 0 { // a later fragment: no transport header
			r.kind = kindUntimed
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
		return
	}
	switch k.proto {
	case protoTCP:
		r.parseTCP(l4, l4len)
	case protoUDP:
		r.parseUDP(l4)
	case protoICMP, protoICMPv6:
		r.parseICMP(l4)
	default: // IPv6 extension headers included: not walked
		r.kind = kindUntimed
	}
}

// Observe takes a packet read by Parse, seen at now (ns).
func (t *Table) Observe(r *Record, now int64) {
	t.st.Packets++
	switch r.kind {
	case kindMalformed:
		t.st.Malformed++
	case kindUntimed:
		t.st.Untimed++
	case kindTCP:
		t.tcp(r, now)
	case kindRequest, kindReply:
		t.echo(r, now)
	case kindQUICLong:
		i := t.lookup(&r.key, now)
		f := &t.flows[i]
		f.lastSeen, f.quic, f.method = now, true, MethodQUICSpin
	case kindQUICShort:
		if !t.spinFlow(&r.key, r.flags != 0, r.dir, now) {
			t.st.Untimed++ // a short header of a flow not known as QUIC
		}
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
