package flow

import (
	"slices"
	"time"

	"github.com/pi2hop/pi2hop/figure"
)

// rttFields fills the RTT fields of iv from samples (which it sorts), with
// figure's nearest-rank percentiles like every pi2hop figure.
func rttFields(iv *Interval, samples []time.Duration) {
	iv.RTTSamples = len(samples)
	if len(samples) == 0 {
		return
	}
	var sum time.Duration
	for _, s := range samples {
		sum += s
	}
	slices.Sort(samples)
	iv.RTTMeanMs = figure.Ms(sum / time.Duration(len(samples)))
	iv.RTTP50Ms = figure.Ms(figure.Quantile(samples, 0.5))
	iv.RTTP99Ms = figure.Ms(figure.Quantile(samples, 0.99))
	iv.RTTMaxMs = figure.Ms(samples[len(samples)-1])
}

// frac returns a/b, or 0 when b is 0.
func frac(a, b int64) float64 {
	if b <= 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// bps converts bytes over d to bit/s.
func bps(bytes int64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(bytes) * 8 / d.Seconds()
}
