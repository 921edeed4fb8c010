package metrics

import (
	"math"
	"time"
)

// Goodput is the application payload delivered in d, in bit/s: distinct
// payload bytes delivered in order. 0 when d <= 0.
func Goodput(bytes uint64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(bytes) * 8 / d.Seconds()
}

// Utilisation is the share of a link's capacity that carried packets:
// bytes dequeued / (capacity · d), with the capacity in bit/s. 0 when the
// capacity or d is not positive.
func Utilisation(bytes uint64, capacityBps float64, d time.Duration) float64 {
	if capacityBps <= 0 || d <= 0 {
		return 0
	}
	return float64(bytes) * 8 / (capacityBps * d.Seconds())
}

// LossRate is (sent − received) / sent, clamped to [0, 1]: duplicates or
// counters read at slightly different moments must not give a negative
// loss. 0 when nothing was sent.
func LossRate(sent, received uint64) float64 {
	if sent == 0 || received >= sent {
		return 0
	}
	return float64(sent-received) / float64(sent)
}

// Jain is Jain's fairness index (Σx)² / (n·Σx²) over per-flow mean rates:
// 1 when all are equal, 1/n when one flow takes everything. It is 0 when
// undefined (no flows, or every rate 0).
func Jain(rates []float64) float64 {
	var sum, sq float64
	for _, x := range rates {
		sum += x
		sq += x * x
	}
	if len(rates) == 0 || sq == 0 {
		return 0
	}
	return sum * sum / (float64(len(rates)) * sq)
}

// RateRatio is a/b: the L4S flow's rate over the classic flow's, which
// DualPI2 with k = 2 aims to keep near 1 (RFC 9332 §2.1). +Inf when only
// b is 0, 0 when both are.
func RateRatio(a, b float64) float64 {
	if b == 0 {
		if a == 0 {
			return 0
		}
		return math.Inf(1)
	}
	return a / b
}

// WindowLimit is the most a window-limited flow can carry: window/RTT in
// bit/s (seed 001: 17 520 B / 15 ms ≈ 9.34 Mbit/s), and never more than
// the link rate when linkBps > 0.
func WindowLimit(windowBytes uint64, rtt time.Duration, linkBps float64) float64 {
	if rtt <= 0 {
		return linkBps
	}
	r := float64(windowBytes) * 8 / rtt.Seconds()
	if linkBps > 0 && r > linkBps {
		return linkBps
	}
	return r
}

// RelErr is |measured − predicted| / predicted; +Inf when predicted is 0
// and measured is not.
func RelErr(measured, predicted float64) float64 {
	if predicted == 0 {
		if measured == 0 {
			return 0
		}
		return math.Inf(1)
	}
	return math.Abs(measured-predicted) / predicted
}
