package shaper

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"time"
)

// Dist is the distribution a Jitter draws its delay variation from, as
// netem's "distribution" names them.
type Dist uint8

const (
	DistUniform      Dist = iota // uniform in [−Amount, +Amount] (netem's default)
	DistNormal                   // normal, standard deviation Amount
	DistPareto                   // Pareto (shape 3), shifted and scaled to mean 0, deviation Amount
	DistParetoNormal             // ¼ normal + ¾ Pareto, rescaled to deviation Amount (netem's mix)
)

var distNames = [...]string{"uniform", "normal", "pareto", "paretonormal"}

func (d Dist) String() string {
	if int(d) < len(distNames) {
		return distNames[d]
	}
	return "unknown"
}

// MarshalText writes d's netem name, as settings carry it.
func (d Dist) MarshalText() ([]byte, error) {
	if int(d) >= len(distNames) {
		return nil, fmt.Errorf("jitter distribution %d: want one of %s", d, strings.Join(distNames[:], ", "))
	}
	return []byte(distNames[d]), nil
}

// UnmarshalText reads a netem name (ParseDist).
func (d *Dist) UnmarshalText(b []byte) error {
	v, err := ParseDist(string(b))
	if err == nil {
		*d = v
	}
	return err
}

// ParseDist reads a distribution name.
func ParseDist(s string) (Dist, error) {
	for i, n := range distNames {
		if s == n {
			return Dist(i), nil
		}
	}
	return 0, fmt.Errorf("distribution %q: want one of %s", s, strings.Join(distNames[:], ", "))
}

// Jitter varies each packet's one-way delay by a random amount drawn from
// Dist and scaled by Amount (ns), as netem's "delay D J distribution X".
// Unlike netem it never reorders: the link releases a packet at
// max(departure + delay + variation, previous release), as the queueing
// on a real path would, and the delay plus variation is never negative.
// The zero Jitter adds nothing (and draws nothing).
type Jitter struct {
	Amount int64 `json:"amount"`         // ns: the half-width (uniform) or standard deviation (the others)
	Dist   Dist  `json:"dist,omitempty"` // uniform by default
}

// Validate checks the amount and the distribution.
func (j Jitter) Validate() error {
	if j.Amount < 0 {
		return fmt.Errorf("jitter %v: must be >= 0", time.Duration(j.Amount))
	}
	if int(j.Dist) >= len(distNames) {
		return fmt.Errorf("jitter distribution %d: want one of %s", j.Dist, strings.Join(distNames[:], ", "))
	}
	return nil
}

func (j Jitter) String() string {
	if j.Amount == 0 {
		return "none"
	}
	return fmt.Sprintf("%v %s", time.Duration(j.Amount), j.Dist)
}

// Pareto with shape a = 3 and scale 1: mean a/(a−1) = 1.5, variance
// a/((a−1)²(a−2)) = 0.75.
const (
	paretoShape = 3
	paretoMean  = 1.5
)

var paretoSD = math.Sqrt(0.75)

// pareto draws a Pareto(3) variate normalised to mean 0, deviation 1.
func pareto(rng *rand.Rand) float64 {
	u := 1 - rng.Float64() // (0, 1]
	return (math.Pow(u, -1.0/paretoShape) - paretoMean) / paretoSD
}

// paretoNormalSD: the deviation of ¼N + ¾P for independent unit variates.
var paretoNormalSD = math.Sqrt(0.25*0.25 + 0.75*0.75)

// Sample draws one packet's delay variation, ns.
func (j Jitter) Sample(rng *rand.Rand) int64 {
	if j.Amount == 0 {
		return 0
	}
	a := float64(j.Amount)
	var x float64
	switch j.Dist {
	case DistNormal:
		x = rng.NormFloat64()
	case DistPareto:
		x = pareto(rng)
	case DistParetoNormal:
		x = (0.25*rng.NormFloat64() + 0.75*pareto(rng)) / paretoNormalSD
	default:
		x = 2*rng.Float64() - 1
	}
	v := x * a
	// A heavy tail can exceed any int64; clip far beyond a realistic delay.
	return int64(max(min(v, 1e15), -1e15))
}
