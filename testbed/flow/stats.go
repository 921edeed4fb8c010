package flow

import (
	"slices"
	"time"
)

// quantile returns the q-quantile (0..1) of sorted by the nearest-rank
// method, or 0 for no samples.
func quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q*float64(len(sorted))+0.5) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// rttFields fills the RTT fields of iv from samples (which it sorts).
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
	iv.RTTMeanMs = ms(sum / time.Duration(len(samples)))
	iv.RTTP50Ms = ms(quantile(samples, 0.5))
	iv.RTTP99Ms = ms(quantile(samples, 0.99))
	iv.RTTMaxMs = ms(samples[len(samples)-1])
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }

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
