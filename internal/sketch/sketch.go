// Package sketch summarises a stream of durations in bounded memory:
// count, mean and maximum exactly, percentiles by nearest rank (as
// package figure ranks them) to a relative accuracy, from a DDSketch
// (Masson, Rim and Lee, VLDB 2019). analyze's and replay's percentiles
// are this one definition.
package sketch

import (
	"math"

	"github.com/DataDog/sketches-go/ddsketch"
	"github.com/pi2hop/pi2hop/figure"
)

// Sketch summarises int64 samples (ns). The zero value is not usable:
// make one with New.
type Sketch struct {
	dd  *ddsketch.DDSketch
	n   int
	sum float64
	max int64
}

// New returns an empty sketch whose percentiles are within accuracy·x of
// x, the exact nearest-rank value (figure.Quantile) of the same samples;
// 0 < accuracy < 1.
func New(accuracy float64) *Sketch {
	// The library's default store: pages of 32 buckets made only where
	// values fall, and a few values kept in a buffer until a page is worth
	// it, so a sketch with a handful of samples costs about 200 bytes, not
	// a dense array. It never merges buckets: no error beyond the
	// mapping's.
	dd, err := ddsketch.NewDefaultDDSketch(accuracy)
	if err != nil { // only for an accuracy outside (0, 1)
		panic(err)
	}
	return &Sketch{dd: dd}
}

// Add counts one sample.
func (s *Sketch) Add(v int64) {
	if s.n == 0 || v > s.max {
		s.max = v
	}
	s.n++
	s.sum += float64(v)
	// An int64 in ns is always inside the sketch's indexable range.
	_ = s.dd.Add(float64(v))
}

// Count is the number of samples.
func (s *Sketch) Count() int { return s.n }

// Mean is the samples' mean (0 without samples).
func (s *Sketch) Mean() float64 {
	if s.n == 0 {
		return 0
	}
	return s.sum / float64(s.n)
}

// Max is the largest sample (0 without samples).
func (s *Sketch) Max() int64 { return s.max }

// Quantile is the p-quantile by nearest rank, as figure.Quantile ranks,
// answered from the sketch's buckets (GetValueAtQuantile ranks by
// p·(n−1) instead, so its p99 of 100 samples would not be figure's
// 99th); 0 without samples.
func (s *Sketch) Quantile(p float64) int64 {
	if s.n == 0 {
		return 0
	}
	rank := float64(figure.Rank(s.n, p) - 1) // 0-based; counts are exact integers
	neg := s.dd.GetNegativeValueStore()
	nNeg, nZero := neg.TotalCount(), s.dd.GetZeroCount()
	var v float64
	switch {
	case rank < nNeg: // negative values rank from the largest magnitude
		v = -s.dd.Value(neg.KeyAtRank(nNeg - 1 - rank))
	case rank < nNeg+nZero:
		v = 0
	default:
		v = s.dd.Value(s.dd.GetPositiveValueStore().KeyAtRank(rank - nNeg - nZero))
	}
	// A bucket's value may lie above every sample in it; the maximum is
	// known exactly and no quantile exceeds it.
	return min(int64(math.Round(v)), s.max)
}
