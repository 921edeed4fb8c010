package analyze

import (
	"github.com/pi2hop/pi2hop/figure"
	qsketch "github.com/pi2hop/pi2hop/internal/sketch"
)

// SketchAccuracy is the relative accuracy α of analyze's percentiles:
// each one is within α·x of x, the exact nearest-rank value
// (figure.Quantile) of the same samples. DDSketch (Masson, Rim and Lee,
// VLDB 2019) buys that with logarithmic buckets of ratio (1+α)/(1−α):
// about 800 buckets for the seven decades from 1µs to 10s, whatever the
// packet count, so analyze's memory does not grow with the capture.
const SketchAccuracy = 0.01

// sketch summarises durations in ns (package sketch: the one definition
// of a percentile over a stream).
type sketch struct{ *qsketch.Sketch }

func newSketch() *sketch { return &sketch{qsketch.New(SketchAccuracy)} }

func (s *sketch) add(v int64)              { s.Add(v) }
func (s *sketch) quantile(p float64) int64 { return s.Quantile(p) }

// percentiles summarises s in ms.
func (s *sketch) percentiles() Percentiles {
	if s.Count() == 0 {
		return Percentiles{}
	}
	return Percentiles{
		Count:         s.Count(),
		Mean:          s.Mean() / 1e6,
		P50:           ms(s.quantile(0.50)),
		P90:           ms(s.quantile(0.90)),
		P99:           ms(s.quantile(0.99)),
		Max:           ms(s.Max()),
		RelativeError: SketchAccuracy,
	}
}

// curve is s's distribution as a plot draws it: the sample of each of
// figure.CurveRanks, in ms, with the share of samples at or below it.
func (s *sketch) curve() figure.Dist {
	return figure.Curve(s.Count(), func(q float64) float64 { return ms(s.quantile(q)) })
}
