package figure

import (
	"cmp"
	"math"
	"slices"
)

// Rank is the 1-based rank of the p-quantile of n samples by the
// nearest-rank method: ceil(p·n), so that at least a share p of the
// samples are at or below the chosen one. p99 of 100 samples is the 99th
// smallest (not the largest), p50 of 3 is the 2nd, p99 of 10 is the 10th.
//
// p is in (0, 1]; p <= 0 gives 1 (the minimum) and p > 1 gives n (the
// maximum). Rank is 0 only when n <= 0.
//
// p·n is computed in floating point, where a decimal p such as 0.07 is
// stored a few ulps off, so 0.07·100 comes out as 7.000000000000001 and a
// plain ceil would give rank 8. A product within a relative 1e-12 above
// an integer is therefore taken as that integer. For a p of d decimals a
// true p·n that is not an integer is at least 10^-d above one, so this
// is exact for n below 10^(12-d)/p: 10^9 samples at p = 0.999.
func Rank(n int, p float64) int {
	switch {
	case n <= 0:
		return 0
	case !(p > 0): // NaN too
		return 1
	case p >= 1:
		return n
	}
	x := p * float64(n)
	r := math.Ceil(x)
	if f := math.Floor(x); x-f <= 1e-12*x {
		r = f
	}
	return min(max(int(r), 1), n)
}

// Quantile returns the p-quantile of sorted (ascending) by the
// nearest-rank method (see Rank): always a sample, never interpolated.
// The zero value for no samples.
func Quantile[S ~[]E, E cmp.Ordered](sorted S, p float64) E {
	var zero E
	if len(sorted) == 0 {
		return zero
	}
	return sorted[Rank(len(sorted), p)-1]
}

// Summary is a set of samples as the reports print it: count, mean,
// nearest-rank percentiles and the extremes, in the samples' unit
// (milliseconds for delays).
type Summary struct {
	N    int     `json:"n"`
	Min  float64 `json:"min"`
	Mean float64 `json:"mean"`
	P50  float64 `json:"p50"`
	P95  float64 `json:"p95"`
	P99  float64 `json:"p99"`
	Max  float64 `json:"max"`
}

// Summarise returns the Summary of xs; the zero Summary when xs is
// empty. xs is not modified.
func Summarise(xs []float64) Summary {
	if len(xs) == 0 {
		return Summary{}
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	sum := 0.0
	for _, x := range s {
		sum += x
	}
	return Summary{
		N:    len(s),
		Min:  s[0],
		Mean: sum / float64(len(s)),
		P50:  Quantile(s, 0.50),
		P95:  Quantile(s, 0.95),
		P99:  Quantile(s, 0.99),
		Max:  s[len(s)-1],
	}
}

// Dist is an empirical distribution as a plot draws it: X ascending, in
// the samples' unit (milliseconds for delays), and Share[i] the fraction
// of the N samples at or below X[i]. The point at share k/N is the sample
// of rank k, so the curve passes through every Quantile.
type Dist struct {
	X     []float64
	Share []float64
	N     int
}

// CDF returns the Dist of xs with every sample a point. xs is not
// modified.
func CDF(xs []float64) Dist {
	x := slices.Clone(xs)
	slices.Sort(x)
	share := make([]float64, len(x))
	for i := range x {
		share[i] = float64(i+1) / float64(len(x))
	}
	return Dist{X: x, Share: share, N: len(x)}
}

// Curve returns the Dist of n samples kept as counts (a histogram, a
// sketch), drawn at CurveRanks: quantile(q) is the sample at share q
// (q = rank/n), in the unit X is to have.
func Curve(n int, quantile func(q float64) float64) Dist {
	d := Dist{N: n}
	for _, r := range CurveRanks(n) {
		q := float64(r) / float64(n)
		d.X = append(d.X, quantile(q))
		d.Share = append(d.Share, q)
	}
	return d
}

// CurveRanks are the ranks (1..n, ascending) at which a distribution
// kept as counts (a histogram, a sketch) is drawn: every 0.25 % of the
// samples in the body and, towards the largest, ranks whose distance
// from the top shrinks by 10^(1/20) a step, so a CCDF on a log axis gets
// about 20 points a decade, down to the largest sample (rank n).
func CurveRanks(n int) []int {
	if n <= 0 {
		return nil
	}
	seen := map[int]bool{n: true}
	for j := 1; j <= 400; j++ {
		seen[Rank(n, float64(j)/400)] = true
	}
	for m := float64(n); m >= 1; m /= math.Pow(10, 0.05) {
		seen[n-int(m)+1] = true
	}
	rs := make([]int, 0, len(seen))
	for r := range seen {
		rs = append(rs, r)
	}
	slices.Sort(rs)
	return rs
}
