package figure

import "time"

// Ms is d in float milliseconds, the unit every printed delay uses.
func Ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// Millis converts durations to float milliseconds (see Ms).
func Millis(ds []time.Duration) []float64 {
	out := make([]float64, len(ds))
	for i, d := range ds {
		out[i] = Ms(d)
	}
	return out
}

// FPSShares returns the share of one-second windows with at least good
// frames displayed and the share with none (docs/design.md, the call's
// figures: Apple's "mostly above 25 fps" and "dropping to 0"). 0, 0 for no
// windows.
func FPSShares(fps []int, good int) (atLeast, zero float64) {
	if len(fps) == 0 {
		return 0, 0
	}
	var a, z int
	for _, f := range fps {
		if f >= good {
			a++
		}
		if f == 0 {
			z++
		}
	}
	return float64(a) / float64(len(fps)), float64(z) / float64(len(fps))
}
