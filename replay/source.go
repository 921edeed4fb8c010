package replay

import "github.com/pi2hop/pi2hop/aqm"

// Packet is one packet of a replay input.
type Packet struct {
	Index int     // position in the input, from 0
	Time  int64   // arrival, ns of virtual time
	Len   int32   // IP length in bytes: what the link serialises
	ECN   aqm.ECN // the codepoint as the packet arrives
	Flow  uint32  // flow id (a capture: the 5-tuple hash)
	DSCP  uint8   // DSCP (NQB is 45), for the queues that classify by it

	// Capture input only: the IP packet, zero-padded to its length on the
	// wire when the capture truncated it (so its header's lengths hold),
	// and how many of those bytes were captured. A Source may reuse Frame
	// for the next packet; Run keeps a copy when Config.KeepFrames is set.
	Frame  []byte
	CapLen int
}

// Source yields a replay input's packets in arrival order (Time never
// decreases). Next fills p and returns false at the end of the input; it
// need not set p.Index.
type Source interface {
	Next(p *Packet) (bool, error)
}
