package flow

import "time"

// freezeDetector applies the W3C webrtc-stats freeze rule to display
// times as they come: a gap of at least max(3·avg, avg + 150 ms), avg the
// mean of the last 30 display intervals.
type freezeDetector struct {
	start   int64 // µs: session start, for Stall.At
	nominal int64 // µs per frame: avg before any interval is known
	last    int64 // µs of the last display, 0 before the first
	window  [30]int64
	n, pos  int
	sum     int64

	stalls    []Stall
	total     time.Duration
	gaps100ms int
}

// display adds a frame shown at at (µs) and returns the stall it ended, if any.
func (f *freezeDetector) display(at int64) (Stall, bool) {
	if f.last == 0 {
		f.last = at
		return Stall{}, false
	}
	gap := at - f.last
	s, stalled := f.check(gap)
	f.last = at
	if f.n == len(f.window) {
		f.sum -= f.window[f.pos]
	} else {
		f.n++
	}
	f.window[f.pos] = gap
	f.sum += gap
	f.pos = (f.pos + 1) % len(f.window)
	return s, stalled
}

// check classifies a gap following the last display.
func (f *freezeDetector) check(gap int64) (Stall, bool) {
	avg := f.nominal
	if f.n > 0 {
		avg = f.sum / int64(f.n)
	}
	if gap > 100_000 {
		f.gaps100ms++
	}
	if gap < max(3*avg, avg+150_000) {
		return Stall{}, false
	}
	s := Stall{At: time.Duration(f.last-f.start) * time.Microsecond, Duration: time.Duration(gap) * time.Microsecond}
	f.stalls = append(f.stalls, s)
	f.total += s.Duration
	return s, true
}

// finish closes the session at end (µs): a video frozen until the end,
// or never shown at all, is one more stall.
func (f *freezeDetector) finish(end int64) {
	if f.last == 0 {
		if end-f.start >= 150_000+f.nominal {
			f.last = f.start
			f.check(end - f.start)
		}
		return
	}
	f.check(end - f.last)
}

// fpsWindows counts displays in each whole 1 s window from start up to
// end (µs); a partial last window would understate the rate and is left out.
func fpsWindows(displays []int64, start, end int64) []int {
	if end <= start {
		return nil
	}
	fps := make([]int, (end-start)/1_000_000)
	for _, at := range displays {
		if i := (at - start) / 1_000_000; at >= start && int(i) < len(fps) {
			fps[i]++
		}
	}
	return fps
}
