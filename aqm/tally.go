package aqm

// Tally is packets and bytes: what one ECN codepoint carried in a flow,
// a capture or a direction.
type Tally struct {
	Packets uint64 `json:"packets"`
	Bytes   uint64 `json:"bytes"`
}

// ByECN is a Tally per ECN codepoint.
type ByECN struct {
	NotECT Tally `json:"not_ect"`
	ECT1   Tally `json:"ect1"`
	ECT0   Tally `json:"ect0"`
	CE     Tally `json:"ce"`
}

// ByECNOf is c, indexed by codepoint, as a ByECN.
func ByECNOf(c *[4]Tally) ByECN {
	return ByECN{NotECT: c[NotECT], ECT1: c[ECT1], ECT0: c[ECT0], CE: c[CE]}
}

// Add counts one packet of bytes with codepoint e.
func (c *ByECN) Add(e ECN, bytes int) {
	p := &c.CE
	switch e {
	case NotECT:
		p = &c.NotECT
	case ECT1:
		p = &c.ECT1
	case ECT0:
		p = &c.ECT0
	}
	p.Packets++
	p.Bytes += uint64(bytes)
}

// Total is the sum over codepoints.
func (c ByECN) Total() Tally {
	return Tally{
		Packets: c.NotECT.Packets + c.ECT1.Packets + c.ECT0.Packets + c.CE.Packets,
		Bytes:   c.NotECT.Bytes + c.ECT1.Bytes + c.ECT0.Bytes + c.CE.Bytes,
	}
}
