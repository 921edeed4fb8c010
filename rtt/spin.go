package rtt

// noSpinAfter is how many short-header packets each way a QUIC flow
// sends without a spin edge before it is said not to spin. A spinning
// flow has an edge every round trip, so a flow that sends this many
// packets each way in under one round trip is said not to spin early, and
// takes StatusMeasured back at its first sample.
const noSpinAfter = 64

// spinState follows a QUIC flow's spin bit each way (RFC 9000 §17.4):
// the server sends the value it last received, the client its inverse,
// so the value flips once per round trip. An edge going up is the client
// starting a round; the edge going down that follows closes the server
// half, and the client's next edge the client half (RFC 9312 §3.8.2).
type spinState struct {
	val    [2]bool  // the spin value each way, once seen
	seen   [2]bool  // a short header was seen that way
	edgeAt [2]int64 // when the last accepted edge went that way
	edged  [2]bool  // an edge went that way
	short  [2]uint32
	edges  uint32
	noSpin bool
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
	// packet reordered from before the last edge, and ignored.
	o := 1 - d
	if !s.seen[o] || (d == Up) == (v != s.val[o]) {
		s.val[d], s.edges = v, s.edges+1
		if s.edged[o] {
			t.sample(i, d, s.edgeAt[o], now)
			s.noSpin = false
		}
		s.edgeAt[d], s.edged[d] = now, true
	}
	return true
}
