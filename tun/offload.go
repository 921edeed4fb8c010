package tun

// OffloadStats counts what the offload backend did to packets on their way
// through it (the hop's own counters see only what comes out of a split
// and goes into a write).
type OffloadStats struct {
	SuperPackets      uint64 // GSO packets read
	Segments          uint64 // packets cut from them
	Completed         uint64 // single packets read with a partial checksum, completed
	Coalesced         uint64 // super-packets written
	CoalescedSegments uint64 // the packets in them
	Refused           uint64 // super-packets the kernel refused, then written packet by packet
	// Packets read and dropped, by reason: vnet header inconsistent,
	// IP/L4 headers inconsistent with it, bad GSO size, too big for the
	// buffer. A super-packet counts once, however many segments it held.
	BadVnet, BadHeaders, BadGSOSize, TooBig uint64
}

// Dropped is the sum of the drop counters.
func (s OffloadStats) Dropped() uint64 { return s.BadVnet + s.BadHeaders + s.BadGSOSize + s.TooBig }

func (s *OffloadStats) drop(r dropReason) {
	switch r {
	case dropVnet:
		s.BadVnet++
	case dropHeaders:
		s.BadHeaders++
	case dropGSOSize:
		s.BadGSOSize++
	default:
		s.TooBig++
	}
}
