package rtt

import (
	"math"
	"math/bits"

	"github.com/pi2hop/pi2hop/figure"
)

// Hist is one half's samples, counted in fixed logarithmic buckets so
// that adding one writes a bucket and allocates nothing: bucket 0 holds
// everything below 2^histMinExp ns (about 4 µs), then histSub buckets per
// power of two (1.6 % wide at most) up to 2^histMaxExp ns (about 34 s);
// longer samples count in the last bucket. Its figures are within 0.8 %
// of the samples they stand for, 0.16 ms at 20 ms: finer than the 0.3 ms
// by which a ping's own round trip and the hop's are compared. At 5.9 KB
// a half it suits a table of a thousand flows or so.
type Hist struct {
	N      uint64 // samples
	Max    int64  // the largest sample, measured (ns)
	Counts histCounts
}

// histCounts are a Hist's buckets. The table keeps a flow's count and
// maximum beside its other state and the buckets apart, so that a
// sample writes one line of its own.
type histCounts [histBuckets]uint32

const (
	histMinExp  = 12
	histMaxExp  = 35
	histSubBits = 6
	histSub     = 1 << histSubBits
	histBuckets = 1 + (histMaxExp-histMinExp)*histSub
)

func histIndex(ns int64) int {
	if ns < 1<<histMinExp {
		return 0
	}
	e := bits.Len64(uint64(ns)) - 1 // ns is in [2^e, 2^(e+1))
	i := 1 + (e-histMinExp)*histSub + int(uint64(ns)>>uint(e-histSubBits))&(histSub-1)
	return min(i, histBuckets-1)
}

// histUpper is the largest value of bucket i.
func histUpper(i int) int64 {
	if i == 0 {
		return 1<<histMinExp - 1
	}
	if i == histBuckets-1 {
		return math.MaxInt64
	}
	e := (i-1)/histSub + histMinExp
	sub := int64((i-1)%histSub) | histSub
	return (sub+1)<<uint(e-histSubBits) - 1
}

// histMiddle is the middle of bucket i (of the last, its lower edge).
func histMiddle(i int) int64 {
	lo := int64(0)
	if i > 0 {
		lo = histUpper(i-1) + 1
	}
	if i == histBuckets-1 {
		return lo
	}
	return lo + (histUpper(i)-lo)/2
}

// Add counts one sample (ns).
func (h *Hist) Add(ns int64) {
	if ns < 0 {
		ns = 0
	}
	h.Counts[histIndex(ns)]++
	h.N++
	h.Max = max(h.Max, ns)
}

// Quantile returns the middle of the bucket that holds the sample of
// nearest rank q (figure.Rank, the one percentile definition), within
// half a bucket (0.8 %) of the sample itself, and never above the
// measured maximum. 0 when empty.
func (h *Hist) Quantile(q float64) int64 {
	if h.N == 0 {
		return 0
	}
	rank := uint64(figure.Rank(int(min(h.N, math.MaxInt)), q))
	var seen uint64
	for i, c := range h.Counts {
		seen += uint64(c)
		if seen >= rank {
			return min(histMiddle(i), h.Max)
		}
	}
	return h.Max
}

// Merge adds o's samples to h: the distribution of two flows' halves
// together (lab app's figure of an app with several flows).
func (h *Hist) Merge(o *Hist) {
	for i, c := range o.Counts {
		h.Counts[i] += c
	}
	h.N += o.N
	h.Max = max(h.Max, o.Max)
}

// Mean is the mean of h's samples, each taken at the middle of its
// bucket (never above the measured maximum): within 0.8 % of the
// samples' own mean. 0 when empty.
func (h *Hist) Mean() float64 {
	if h.N == 0 {
		return 0
	}
	var sum float64
	for i, c := range h.Counts {
		if c > 0 {
			sum += float64(c) * float64(min(histMiddle(i), h.Max))
		}
	}
	return sum / float64(h.N)
}
