package rtt

import (
	"net/netip"
	"slices"
)

// Snapshot is a copy of a table's flows for a reader: the owner fills it
// (CopyTo) between packets, allocating nothing once the snapshot has
// room, and the reader turns it into figures (Flows) without touching the
// table. Make one with NewSnapshot for the table it copies.
type Snapshot struct {
	Stats Stats
	Taken int64 // the owner's clock when copied (ns)
	n     int
	flows []flow
	hists [][2]Hist
}

// NewSnapshot returns a snapshot with room for every flow of t.
func NewSnapshot(t *Table) *Snapshot {
	return &Snapshot{flows: make([]flow, len(t.flows)), hists: make([][2]Hist, len(t.flows))}
}

// CopyTo copies the table's flows into s (the owner's side of the
// handover); s must come from NewSnapshot(t). Only flows in use are
// copied.
func (t *Table) CopyTo(s *Snapshot, now int64) {
	s.Stats, s.Taken, s.n = t.st, now, 0
	for i, tg := range t.tags {
		if tg != 0 && s.n < len(s.flows) {
			f := &t.flows[i]
			s.flows[s.n] = *f
			for h := range s.hists[s.n] {
				s.hists[s.n][h] = Hist{N: f.samples[h], Max: f.max[h], Counts: t.counts[i][h]}
			}
			s.n++
		}
	}
}

// Len is how many flows s holds.
func (s *Snapshot) Len() int { return s.n }

// Flow is one flow's round-trip times as a reader sees them.
type Flow struct {
	Proto  uint8          `json:"proto"`  // 6 TCP, 17 UDP, 1 ICMP, 58 ICMPv6
	Client netip.AddrPort `json:"client"` // ICMP: the echo identifier as port
	Server netip.AddrPort `json:"server"`
	Method Method         `json:"method"`
	Status Status         `json:"status"`
	// Halves are the client half (hop → client → hop) and the server half
	// (hop → server → hop).
	ClientHalf Figures `json:"client_half"`
	ServerHalf Figures `json:"server_half"`
	// Sum is the round trip through the hop: see sumOf.
	Sum Figures `json:"sum"`
	// Dropped counts outstanding packets dropped for newer ones; Karn
	// answers not taken because they covered retransmitted data.
	Dropped  uint64 `json:"dropped"`
	Karn     uint64 `json:"karn"`
	LastSeen int64  `json:"-"` // the owner's clock (ns)
	// Hists are the halves' samples (client, server), for distributions:
	// the snapshot's own, valid until the next CopyTo into it.
	Hists *[2]Hist `json:"-"`
}

// Figures are one half's samples, or their sum, as the hop's flow
// tables and analyze give them (docs/json.md): the count, p50 and p99
// (Hist.Quantile) and the largest, in ms.
type Figures struct {
	N     uint64  `json:"n"`
	P50Ms float64 `json:"p50_ms"`
	P99Ms float64 `json:"p99_ms"`
	MaxMs float64 `json:"max_ms"`
}

// Halves are the figures of a flow's client half, its server half and
// their sum (sumOf) from the halves' histograms (client, server).
func Halves(h *[2]Hist) (client, server, sum Figures) {
	c, s := summarise(&h[ClientHalf]), summarise(&h[ServerHalf])
	return c.figures(), s.figures(), sumOf(c, s).figures()
}

// summary is Figures in ns, as the histograms count: sums are taken
// here, before the one conversion to ms.
type summary struct {
	n             uint64
	p50, p99, max int64
}

func summarise(h *Hist) summary {
	return summary{n: h.N, p50: h.Quantile(0.50), p99: h.Quantile(0.99), max: h.Max}
}

func (s summary) figures() Figures {
	return Figures{N: s.n, P50Ms: float64(s.p50) / 1e6, P99Ms: float64(s.p99) / 1e6, MaxMs: float64(s.max) / 1e6}
}

// sumOf is the flow's round trip through the hop from its halves: each
// figure is the client half's plus the server half's (p50 the sum of
// the p50s, p99 of the p99s, the maximum of the maxima), and N the
// smaller count, 0 unless both halves have samples. The halves are timed
// on different packets, so they are not paired sample by sample. When
// the halves rise and fall together (comonotonic: one queue fills both)
// the sum of their quantiles is the quantile of the round trip exactly;
// otherwise it is an estimate, exact at the extremes of a steady path.
func sumOf(c, s summary) summary {
	if c.n == 0 || s.n == 0 {
		return summary{}
	}
	return summary{n: min(c.n, s.n), p50: c.p50 + s.p50, p99: c.p99 + s.p99, max: c.max + s.max}
}

// Flows returns the flows of s, most recently seen first. Their
// histograms are s's (Flow.Hists): copy them to keep them past the next
// CopyTo into s.
func (s *Snapshot) Flows() []Flow {
	fs := make([]Flow, 0, s.n)
	for i := range s.n {
		fs = append(fs, flowOf(&s.flows[i], &s.hists[i]))
	}
	slices.SortStableFunc(fs, func(a, b Flow) int {
		switch {
		case a.LastSeen > b.LastSeen:
			return -1
		case a.LastSeen < b.LastSeen:
			return 1
		}
		return 0
	})
	return fs
}

func flowOf(f *flow, h *[2]Hist) Flow {
	k := &f.key
	cli, srv := k.addrOf(0), k.addrOf(2)
	out := Flow{
		Proto:    k.proto,
		Client:   netip.AddrPortFrom(cli, uint16(k.ports>>16)),
		Server:   netip.AddrPortFrom(srv, uint16(k.ports)),
		Method:   f.method,
		Dropped:  f.dropped,
		Karn:     f.karn,
		LastSeen: f.lastSeen,
		Hists:    h,
	}
	out.ClientHalf, out.ServerHalf, out.Sum = Halves(h)
	switch {
	case out.ClientHalf.N+out.ServerHalf.N > 0:
		out.Status = StatusMeasured
	case f.spin.noSpin:
		out.Status = StatusNoSpin
	}
	return out
}

// addrOf returns the address at word w of k (0: client, 2: server).
func (k *flowKey) addrOf(w int) netip.Addr {
	if k.version == 4 {
		var a [4]byte
		le.PutUint32(a[:], uint32(k.addrs[w]))
		return netip.AddrFrom4(a)
	}
	var a [16]byte
	le.PutUint64(a[:], k.addrs[w])
	le.PutUint64(a[8:], k.addrs[w+1])
	return netip.AddrFrom16(a)
}
