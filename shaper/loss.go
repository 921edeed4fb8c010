package shaper

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
)

// Loss decides whether a packet is lost on the link.
type Loss interface {
	// Lose is called once per packet as it leaves the link, in order; all
	// randomness comes from rng, so a seeded rng makes a run repeatable.
	Lose(rng *rand.Rand) bool
}

// IID loses each packet independently with probability P (0..1).
type IID struct{ P float64 }

// Lose implements Loss. P <= 0 draws nothing, so a lossless link leaves
// rng's sequence untouched.
func (l IID) Lose(rng *rand.Rand) bool {
	return l.P > 0 && rng.Float64() < l.P
}

func (l IID) String() string { return formatPercent(l.P) }

// GilbertElliott is the two-state burst-loss model (as netem's gemodel):
// per packet the channel moves from Good to Bad with probability P and from
// Bad to Good with probability R, then the packet is lost with LossGood or
// LossBad for the state it is in. With LossGood = 0 and LossBad = 1 (the
// Gilbert model, the default) the mean loss is P/(P+R) and loss bursts last
// 1/R packets on average. It starts in Good and keeps its state between
// calls: use it by pointer, one per link direction.
type GilbertElliott struct {
	P, R              float64
	LossGood, LossBad float64

	bad bool
}

// Lose implements Loss.
func (g *GilbertElliott) Lose(rng *rand.Rand) bool {
	if g.bad {
		g.bad = rng.Float64() >= g.R
	} else {
		g.bad = rng.Float64() < g.P
	}
	p := g.LossGood
	if g.bad {
		p = g.LossBad
	}
	return p > 0 && rng.Float64() < p
}

// String prints the model as ParseLoss reads it (h and k are the delivery
// probabilities in Bad and Good, as in Elliott's notation).
func (g *GilbertElliott) String() string {
	return fmt.Sprintf("ge:p=%s,r=%s,h=%s,k=%s", formatPercent(g.P), formatPercent(g.R),
		formatPercent(1-g.LossBad), formatPercent(1-g.LossGood))
}

const lossForms = `want a percentage as netem reads it: 1% or 1 (both 1 %), 0.01 (0.01 %), or Gilbert-Elliott ge:p=1%,r=30%[,h=0%,k=100%]`

// ParseLoss reads a loss model: "0" (none), a percentage with or without
// the sign ("1%" and "1" are both 1 %, as netem's "loss 1" is), or a
// Gilbert–Elliott model "ge:p=P,r=R[,h=H,k=K]" where p and r are the
// Good→Bad and Bad→Good transition probabilities and h and k the
// probabilities that a packet gets through in Bad and in Good (defaults
// h=0, k=100%: every packet in Bad is lost, none in Good), each a
// percentage in the same way, as netem's gemodel takes them.
func ParseLoss(s string) (Loss, error) {
	t := strings.TrimSpace(s)
	if rest, ok := strings.CutPrefix(strings.ToLower(t), "ge:"); ok {
		return parseGE(s, rest)
	}
	p, err := parseProb(t)
	if err != nil {
		return nil, fmt.Errorf("%q: %v (%s)", s, err, lossForms)
	}
	return IID{P: p}, nil
}

func parseGE(s, params string) (Loss, error) {
	g := &GilbertElliott{LossBad: 1}
	seen := map[string]bool{}
	for _, kv := range strings.Split(params, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok {
			return nil, fmt.Errorf("%q: %q is not key=value (%s)", s, kv, lossForms)
		}
		p, err := parseProb(strings.TrimSpace(v))
		if err != nil {
			return nil, fmt.Errorf("%q: %s: %v", s, k, err)
		}
		if seen[k] {
			return nil, fmt.Errorf("%q: %s given twice", s, k)
		}
		seen[k] = true
		switch k {
		case "p":
			g.P = p
		case "r":
			g.R = p
		case "h":
			g.LossBad = 1 - p
		case "k":
			g.LossGood = 1 - p
		default:
			return nil, fmt.Errorf("%q: unknown parameter %q (want p, r, h, k)", s, k)
		}
	}
	if !seen["p"] || !seen["r"] {
		return nil, fmt.Errorf("%q: p and r are required (%s)", s, lossForms)
	}
	return g, nil
}

// parseProb reads a percentage, "25%" or "25", into 0.25: netem's
// parse_percent divides by 100 whether or not the sign is written.
func parseProb(s string) (float64, error) {
	num, _ := strings.CutSuffix(s, "%")
	f, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("%q is not a number", s)
	}
	if f < 0 || f > 100 {
		return 0, errors.New("not within 0%..100%")
	}
	return f / 100, nil
}

// formatPercent prints a probability as a percentage: 0.01 -> "1%", to 10
// significant digits so 1-0.7 prints as 30%.
func formatPercent(p float64) string {
	return strconv.FormatFloat(p*100, 'g', 10, 64) + "%"
}
