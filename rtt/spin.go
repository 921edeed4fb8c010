package rtt

// noSpinAfter is how many short-header packets each way a QUIC flow
// sends without a spin edge before it is said not to spin. A spinning
// flow has an edge every round trip, so a flow that sends this many
// packets each way in under one round trip is said not to spin early, and
// takes StatusMeasured back at its first sample.
const noSpinAfter = 64

// spinTrust is how many edges a flow's spin bit must show, few changes
// out of turn among them, before they are timed. Endpoints that disable
// the spin bit are asked to set it at random, per packet or per
// connection ID (RFC 9000 §17.4): random bits change at every other
// packet, and a third or more of the changes are out of turn (an edge one
// way that does not answer the other), where a spinning flow's are so
// only when packets are reordered. Its edges are timed once it has shown
// spinTrust of them with fewer than one change out of turn in eight; a
// flow whose changes out of turn reach a quarter of its edges, once it
// has shown eight changes, is taken not to spin, for good.
const spinTrust = 32

// spinState follows a QUIC flow's spin bit each way (RFC 9000 §17.4):
// the server sends the value it last received, the client its inverse,
// so the value flips once per round trip. An edge going up is the client
// starting a round; the edge going down that follows closes the server
// half, and the client's next edge the client half (RFC 9312 §3.8.2).
type spinState struct {
	val      [2]bool  // the spin value each way, once seen
	seen     [2]bool  // a short header was seen that way
	edgeAt   [2]int64 // when the last accepted edge went that way
	edged    [2]bool  // an edge went that way
	short    [2]uint32
	edges    uint32 // edges in turn
	rejected uint32 // changes out of turn
	noSpin   bool   // constant so far, or random
	random   bool   // too many changes out of turn: never timed
}

// trusted reports whether the edges so far look like a spinning flow's:
// enough of them, and fewer than one change in nine out of turn.
func (s *spinState) trusted() bool {
	return !s.random && s.edges >= spinTrust && s.rejected*8 < s.edges
}

// spinFlow takes a QUIC short header whose spin bit is v, if its flow is
// known to be QUIC, and reports whether it was.
func (t *Table) spinFlow(k *flowKey, v bool, d Dir, now int64) bool {
	i := t.find(k)
	if i < 0 || !t.flows[i].quic {
		return false
	}
	f := &t.flows[i]
	f.lastSeen = now
	s := &f.spin
	if s.short[d] < noSpinAfter {
		s.short[d]++
	}
	if !s.seen[d] {
		s.val[d], s.seen[d] = v, true
		return true
	}
	if v == s.val[d] {
		if s.edges == 0 && s.short[Up] >= noSpinAfter && s.short[Down] >= noSpinAfter {
			s.noSpin = true
		}
		return true
	}
	// An edge: going up it must make the client's value differ from the
	// server's, going down it must copy the client's. Anything else is a
	// packet reordered from before the last edge, or a bit set at random.
	o := 1 - d
	if s.seen[o] && (d == Up) != (v != s.val[o]) {
		s.rejected++
		if s.edges+s.rejected >= 8 && s.rejected*4 >= s.edges {
			s.random, s.noSpin = true, true
		}
		return true
	}
	s.val[d], s.edges = v, s.edges+1
	if s.edged[o] && s.trusted() {
		t.sample(i, d, s.edgeAt[o], now)
		s.noSpin = false
	}
	s.edgeAt[d], s.edged[d] = now, true
	return true
}
