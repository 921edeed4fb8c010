package metrics

import (
	"math"
	"slices"
	"time"
)

// Dist summarises a set of samples: count, mean, nearest-rank percentiles
// and the extremes, all in the samples' unit (milliseconds for delays).
type Dist struct {
	N    int     `json:"n"`
	Min  float64 `json:"min"`
	Mean float64 `json:"mean"`
	P50  float64 `json:"p50"`
	P95  float64 `json:"p95"`
	P99  float64 `json:"p99"`
	Max  float64 `json:"max"`
}

// Summarise returns the distribution of xs; the zero Dist when xs is empty.
// xs is not modified.
func Summarise(xs []float64) Dist {
	if len(xs) == 0 {
		return Dist{}
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	sum := 0.0
	for _, x := range s {
		sum += x
	}
	return Dist{
		N:    len(s),
		Min:  s[0],
		Mean: sum / float64(len(s)),
		P50:  percentileSorted(s, 50),
		P95:  percentileSorted(s, 95),
		P99:  percentileSorted(s, 99),
		Max:  s[len(s)-1],
	}
}

// Percentile returns the p-th percentile (0 <= p <= 100) of xs by the
// nearest-rank method: the smallest sample such that at least p % of the
// samples are at or below it. It never interpolates, so the result is
// always a value that was measured. 0 for an empty xs.
func Percentile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return percentileSorted(s, p)
}

func percentileSorted(s []float64, p float64) float64 {
	if p <= 0 {
		return s[0]
	}
	rank := int(math.Ceil(p / 100 * float64(len(s))))
	rank = min(max(rank, 1), len(s))
	return s[rank-1]
}

// Millis converts durations to float milliseconds, the unit the reports
// use for every delay.
func Millis(ds []time.Duration) []float64 {
	out := make([]float64, len(ds))
	for i, d := range ds {
		out[i] = float64(d) / float64(time.Millisecond)
	}
	return out
}

// CDF returns the sorted samples and, for each, the fraction of samples at
// or below it: the points of an empirical CDF plot.
func CDF(xs []float64) (x, frac []float64) {
	x = slices.Clone(xs)
	slices.Sort(x)
	frac = make([]float64, len(x))
	for i := range x {
		frac[i] = float64(i+1) / float64(len(x))
	}
	return x, frac
}
