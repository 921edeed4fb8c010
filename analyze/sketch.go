package analyze

import (
	"math"

	"github.com/DataDog/sketches-go/ddsketch"
	"github.com/pi2hop/pi2hop/figure"
)

// SketchAccuracy is the relative accuracy α of analyze's percentiles:
// each one is within α·x of x, the exact nearest-rank value
// (figure.Quantile) of the same samples. DDSketch (Masson, Rim and Lee,
// VLDB 2019) buys that with logarithmic buckets of ratio (1+α)/(1−α):
// about 800 buckets for the seven decades from 1µs to 10s, whatever the
// packet count, so analyze's memory does not grow with the capture.
const SketchAccuracy = 0.01

// sketch summarises durations in ns: count, mean and maximum exactly,
// percentiles from a DDSketch.
type sketch struct {
	dd  *ddsketch.DDSketch
	n   int
	sum float64
	max int64
}

func newSketch() *sketch {
	// The library's default store: pages of 32 buckets made only where
	// values fall, and a few values kept in a buffer until a page is worth
	// it, so the sketch of a time bin with a handful of samples costs
	// about 200 bytes, not a dense array. It never merges buckets: no
	// error beyond the mapping's.
	dd, err := ddsketch.NewDefaultDDSketch(SketchAccuracy)
	if err != nil { // only for an accuracy outside (0, 1)
		panic(err)
	}
	return &sketch{dd: dd}
}

func (s *sketch) add(v int64) {
	if s.n == 0 || v > s.max {
		s.max = v
	}
	s.n++
	s.sum += float64(v)
	// An int64 in ns is always inside the sketch's indexable range.
	_ = s.dd.Add(float64(v))
}

// quantile is the p-quantile by nearest rank, as figure.Quantile ranks,
// answered from the sketch's buckets. (GetValueAtQuantile ranks by
// p·(n−1) instead, so its p99 of 100 samples would not be figure's 99th.)
func (s *sketch) quantile(p float64) int64 {
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

// percentiles summarises s in ms.
func (s *sketch) percentiles() Percentiles {
	if s.n == 0 {
		return Percentiles{}
	}
	return Percentiles{
		Count:         s.n,
		Mean:          s.sum / float64(s.n) / 1e6,
		P50:           ms(s.quantile(0.50)),
		P90:           ms(s.quantile(0.90)),
		P99:           ms(s.quantile(0.99)),
		Max:           ms(s.max),
		RelativeError: SketchAccuracy,
	}
}

// curve is s's distribution as a plot draws it: the sample of each of
// figure.CurveRanks, in ms, with the share of samples at or below it.
func (s *sketch) curve() figure.Dist {
	return figure.Curve(s.n, func(q float64) float64 { return ms(s.quantile(q)) })
}
