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

// icmp times an ICMP or ICMPv6 echo: the request remembered by its
// sequence number, the reply the other way with the same identifier and
// sequence number answers it. The identifier stands for the ports.
func (t *Table) icmp(k *flowKey, h []byte, d Dir, now int64) {
	if len(h) < 8 {
		t.st.Malformed++
		return
	}
	req, rep := byte(icmpEchoRequest), byte(icmpEchoReply)
	if k.proto == protoICMPv6 {
		req, rep = icmpv6EchoRequest, icmpv6EchoReply
	}
	typ := h[0]
	if typ != req && typ != rep {
		t.st.Untimed++
		return
	}
	id := be.Uint16(h[4:6])
	k.ports = uint32(id)<<16 | uint32(id)
	t.echo(k, MethodICMPEcho, typ == req, uint32(be.Uint16(h[6:8])), d, now)
}

// echo remembers a request (key seq) going d, or answers one that went
// the other way.
func (t *Table) echo(k *flowKey, m Method, request bool, seq uint32, d Dir, now int64) {
	i := t.lookup(k, now)
	f := &t.flows[i]
	f.lastSeen, f.method = now, m
	if request {
		t.push(i, d, seq, now)
		return
	}
	if at, ok := t.popExact(i, 1-d, seq); ok {
		t.sample(i, d, at, now)
	}
}

// udp times pi2hop's probes and udp_prague's messages by their sequence
// numbers, and QUIC by its spin bit. Other UDP is not timed.
func (t *Table) udp(k *flowKey, h []byte, d Dir, now int64) {
	if len(h) < 8 {
		t.st.Malformed++
		return
	}
	orient(k, be.Uint16(h[0:2]), be.Uint16(h[2:4]), d)
	p := h[8:]
	if len(p) == 0 {
		t.st.Untimed++
		return
	}
	switch b := p[0]; {
	case b&0x80 != 0: // a QUIC long header (RFC 9000 §17.2): QUIC from now on
		if len(p) < 5 {
			t.st.Untimed++
			return
		}
		i := t.lookup(k, now)
		f := &t.flows[i]
		f.lastSeen, f.quic, f.method = now, true, MethodQUICSpin
	case b&0xc0 == 0x40 && t.spinFlow(k, b&0x20 != 0, d, now):
	case (b == probeRequest || b == probeReply) && len(p) >= probeMin:
		t.echo(k, MethodProbe, b == probeRequest, be.Uint32(p[2:6]), d, now)
	case (b == pragueData || b == pragueRTData) && len(p) >= pragueDataMin:
		t.echo(k, MethodPrague, true, be.Uint32(p[pragueSeqAt:]), d, now)
	case b == pragueACK && len(p) >= pragueACKMin:
		t.echo(k, MethodPrague, false, be.Uint32(p[pragueAckAt:]), d, now)
	default:
		t.st.Untimed++
	}
}
