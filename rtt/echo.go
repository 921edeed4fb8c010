package rtt

// ICMP echo types (RFC 792, RFC 4443 §4).
const (
	icmpEchoRequest   = 8
	icmpEchoReply     = 0
	icmpv6EchoRequest = 128
	icmpv6EchoReply   = 129
)

// pi2hop's probe messages (package flow): type u8 | ecn u8 | seq u32 ...
// The reply carries the request's sequence number.
const (
	probeRequest = 0x70
	probeReply   = 0x71
	probeMin     = 6
)

// udp_prague's messages (package flow/wire, byte-compatible with
// udp_prague): DATA and RT DATA carry the sender's packet sequence
// number at offset 9; each is answered by an ACK that carries it at
// offset 1. The values here are checked against flow/wire by a test:
// the wire package sits above this one.
const (
	pragueData    = 1
	pragueRTData  = 2
	pragueACK     = 17
	pragueDataMin = 13
	pragueSeqAt   = 9
	pragueACKMin  = 26
	pragueAckAt   = 1
)

// parseICMP reads an ICMP or ICMPv6 echo: the request is remembered by
// its sequence number, the reply the other way with the same identifier
// and sequence number answers it. The identifier stands for the ports.
func (r *Record) parseICMP(h []byte) {
	if len(h) < 8 {
		return
	}
	req, rep := byte(icmpEchoRequest), byte(icmpEchoReply)
	if r.key.proto == protoICMPv6 {
		req, rep = icmpv6EchoRequest, icmpv6EchoReply
	}
	switch h[0] {
	case req:
		r.kind = kindRequest
	case rep:
		r.kind = kindReply
	default:
		r.kind = kindUntimed
		return
	}
	id := be.Uint16(h[4:6])
	r.key.ports = uint32(id)<<16 | uint32(id)
	// The 16-bit sequence number in the top half, so that the rings'
	// serial order (32 bits) follows it across its wrap.
	r.method, r.seq = MethodICMPEcho, uint32(be.Uint16(h[6:8]))<<16
}

// parseUDP reads pi2hop's probes and udp_prague's messages, timed by
// their sequence numbers, and QUIC, timed by its spin bit. Other UDP is
// not timed.
func (r *Record) parseUDP(h []byte) {
	if len(h) < 8 {
		return
	}
	orient(&r.key, be.Uint16(h[0:2]), be.Uint16(h[2:4]), r.dir)
	p := h[8:]
	r.kind = kindUntimed
	if len(p) == 0 {
		return
	}
	switch b := p[0]; {
	case b&0x80 != 0: // a QUIC long header (RFC 9000 §17.2): QUIC from now on
		if b&0x40 != 0 && len(p) >= 7 && quicVersion(be.Uint32(p[1:5])) {
			r.kind = kindQUICLong
		}
	case b&0xc0 == 0x40 && (b != probeRequest && b != probeReply || len(p) < probeMin):
		// A QUIC short header, if the flow is QUIC (Observe decides).
		r.kind, r.flags = kindQUICShort, b&0x20
	case b == probeRequest || b == probeReply:
		// Either a probe or a QUIC short header: a probe unless the flow
		// is QUIC (Observe decides).
		r.kind, r.method, r.seq, r.flags = kindRequest, MethodProbe, be.Uint32(p[2:6]), b&0x20
		if b == probeReply {
			r.kind = kindReply
		}
	case (b == pragueData || b == pragueRTData) && len(p) >= pragueDataMin:
		r.kind, r.method, r.seq = kindRequest, MethodPrague, be.Uint32(p[pragueSeqAt:])
	case b == pragueACK && len(p) >= pragueACKMin:
		r.kind, r.method, r.seq = kindReply, MethodPrague, be.Uint32(p[pragueAckAt:])
	}
}

// echo remembers a request (key seq) going its way, or answers one that
// went the other way.
func (t *Table) echo(r *Record, now int64) {
	if r.method == MethodProbe && t.spinFlow(&r.key, r.flags != 0, r.dir, now) {
		return // a QUIC short header that looks like a probe
	}
	i := t.lookup(&r.key, now)
	f := &t.flows[i]
	f.lastSeen, f.method = now, r.method
	if r.kind == kindRequest {
		t.push(i, r.dir, r.seq, now)
		return
	}
	if at, ok := t.popExact(i, 1-r.dir, r.seq); ok {
		t.sample(i, r.dir, at, now)
	}
}

// quicVersion reports whether v is a QUIC version an endpoint sends in a
// long header: 1 (RFC 9000), 2 (RFC 9369), a draft (0xff0000xx) or a
// greased one (RFC 9000 §15: 0x?a?a?a?a). Other UDP whose first byte has
// its top bits set (a DNS identifier, say) is not taken for QUIC.
func quicVersion(v uint32) bool {
	return v == 1 || v == 0x6b3343cf || v>>8 == 0xff0000 || v&0x0f0f0f0f == 0x0a0a0a0a
}
