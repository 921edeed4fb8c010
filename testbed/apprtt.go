package testbed

import (
	"time"

	"github.com/pi2hop/pi2hop/figure"
	"github.com/pi2hop/pi2hop/rtt"
)

// appRTT is the app's round trip through the hop from its flows' passive
// samples (rtt): each half's samples over all its flows together, and
// the round trip their sum (rtt.Halves' rule: quantile by quantile, as
// when the halves rise and fall together). An app whose client answers
// nothing the hop can time (ping: its replies need no answer) has only
// the server half, which the hop times from the client's packet to the
// answer it sends on to the client: the whole path but the client's own
// stack, so it stands for the round trip, said in the note. dist is the
// round trip's distribution for the CCDF plot.
func appRTT(flows []rtt.Flow) (sum, client, server *figure.Summary, note string, dist figure.Dist) {
	var c, s rtt.Hist
	noSpin := false
	for i := range flows {
		f := &flows[i]
		noSpin = noSpin || f.Status == rtt.StatusNoSpin
		if f.Hists != nil {
			c.Merge(&f.Hists[rtt.ClientHalf])
			s.Merge(&f.Hists[rtt.ServerHalf])
		}
	}
	client, server = histSummary(&c), histSummary(&s)
	switch {
	case c.N > 0 && s.N > 0:
		q := func(p float64) float64 { return figure.Ms(time.Duration(c.Quantile(p) + s.Quantile(p))) }
		sum = &figure.Summary{N: int(min(c.N, s.N)), Min: q(0), Mean: (c.Mean() + s.Mean()) / 1e6,
			P50: q(0.5), P95: q(0.95), P99: q(0.99), Max: figure.Ms(time.Duration(c.Max + s.Max))}
		dist = figure.Curve(sum.N, q)
	case s.N > 0:
		sum, note = server, "only the server half was timed (the client answers nothing the hop can time): it runs from the client's packet to the answer the hop passes on to it, the whole path but the client's own stack"
		dist = figure.Curve(server.N, func(p float64) float64 { return figure.Ms(time.Duration(s.Quantile(p))) })
	case noSpin:
		note = "no RTT: encrypted, no spin bit"
	default:
		note = "no round-trip samples: none of the app's flows carried what the hop times (TCP, QUIC's spin bit, ICMP echo)"
	}
	return sum, client, server, note, dist
}

// histSummary is h's figures in ms; nil when h is empty.
func histSummary(h *rtt.Hist) *figure.Summary {
	if h.N == 0 {
		return nil
	}
	q := func(p float64) float64 { return figure.Ms(time.Duration(h.Quantile(p))) }
	return &figure.Summary{N: int(h.N), Min: q(0), Mean: h.Mean() / 1e6, P50: q(0.5), P95: q(0.95), P99: q(0.99), Max: figure.Ms(time.Duration(h.Max))}
}
