package metrics

import "time"

// Stalls is what the W3C freeze rule finds in a receiver's display times.
type Stalls struct {
	Count     int     `json:"count"`           // freezes (webrtc-stats freezeCount)
	TotalMs   float64 `json:"total_ms"`        // Σ freeze durations inside the window, ms
	Rate      float64 `json:"rate"`            // freeze time / window length (the stall rate)
	PerMinute float64 `json:"per_minute"`      // Count per minute of window
	Gaps100ms int     `json:"gaps_over_100ms"` // display gaps > 100 ms, frozen or not
}

// freezeHistory is how many past display intervals the freeze threshold
// averages (webrtc-stats: "the last 30 rendered frames").
const freezeHistory = 30

// FreezeThreshold is the webrtc-stats freeze rule: a display gap is a
// freeze when it is at least max(3·avg, avg + 150 ms), avg being the mean of
// the previous display intervals (≈ 183 ms at 30 fps).
func FreezeThreshold(avg time.Duration) time.Duration {
	return max(3*avg, avg+150*time.Millisecond)
}

// FindStalls applies the freeze rule to display times (offsets from any
// common origin, ascending) within [from, to). Frames before from still
// feed the running average, so the warm-up shapes the threshold but is
// not counted. A freeze still going on at to (no frame since) counts too,
// and a freeze that straddles from or to counts only its part inside the
// window. nominal is the frame interval assumed before two frames have
// been displayed (1/fps).
func FindStalls(display []time.Duration, from, to time.Duration, nominal time.Duration) Stalls {
	var s Stalls
	var total time.Duration
	if to <= from {
		return s
	}
	var hist [freezeHistory]time.Duration
	n, head := 0, 0 // intervals held, next slot
	var sum time.Duration
	avg := func() time.Duration {
		if n == 0 {
			return nominal
		}
		return sum / time.Duration(n)
	}
	check := func(prev, next time.Duration) {
		gap := next - prev
		lo, hi := max(prev, from), min(next, to)
		if hi <= lo {
			return // gap entirely outside the window
		}
		if next <= to && prev >= from && gap > 100*time.Millisecond {
			s.Gaps100ms++
		}
		if gap >= FreezeThreshold(avg()) {
			s.Count++
			total += hi - lo
		}
	}
	for i := 1; i < len(display); i++ {
		prev, next := display[i-1], display[i]
		if prev >= to {
			break
		}
		check(prev, next)
		gap := next - prev
		if n == freezeHistory {
			sum -= hist[head]
		} else {
			n++
		}
		hist[head] = gap
		sum += gap
		head = (head + 1) % freezeHistory
	}
	// A freeze still open at the end: no frame after the last one shown
	// before to (or none at all: the whole window is frozen).
	if len(display) == 0 || display[len(display)-1] < to {
		start := from
		gap := to - from
		if len(display) > 0 {
			last := display[len(display)-1]
			start, gap = max(last, from), to-last
		}
		if gap >= FreezeThreshold(avg()) {
			s.Count++
			total += to - start
		}
	}
	win := to - from
	s.TotalMs = float64(total) / float64(time.Millisecond)
	s.Rate = float64(total) / float64(win)
	s.PerMinute = float64(s.Count) / win.Minutes()
	return s
}

// FramesPerSecond counts displayed frames in each whole second of
// [from, to): window k is [from + k s, from + (k+1) s). A trailing part
// second is left out.
func FramesPerSecond(display []time.Duration, from, to time.Duration) []int {
	n := int((to - from) / time.Second)
	if n <= 0 {
		return nil
	}
	fps := make([]int, n)
	for _, t := range display {
		if t < from {
			continue
		}
		k := int((t - from) / time.Second)
		if k >= n {
			break
		}
		fps[k]++
	}
	return fps
}
