package metrics

import (
	"math"
	"testing"
	"time"
)

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

func TestRates(t *testing.T) {
	tests := []struct {
		name      string
		got, want float64
	}{
		{"goodput 1.25 MB in 1 s", Goodput(1_250_000, time.Second), 10e6},
		{"goodput over zero time", Goodput(100, 0), 0},
		{"utilisation 90 %", Utilisation(1_125_000, 10e6, time.Second), 0.9},
		{"utilisation without capacity", Utilisation(1, 0, time.Second), 0},
		{"loss 40 %", LossRate(100, 60), 0.4},
		{"loss nothing sent", LossRate(0, 0), 0},
		{"loss duplicates clamp to 0", LossRate(10, 12), 0},
		{"jain equal", Jain([]float64{5, 5, 5, 5}), 1},
		{"jain one of four takes all", Jain([]float64{8, 0, 0, 0}), 0.25},
		{"jain 1 and 3", Jain([]float64{1, 3}), 0.8},
		{"jain no flows", Jain(nil), 0},
		{"jain all zero", Jain([]float64{0, 0}), 0},
		{"ratio", RateRatio(6, 4), 1.5},
		{"ratio both zero", RateRatio(0, 0), 0},
		{"ratio b zero", RateRatio(1, 0), math.Inf(1)},
		{"seed 001: 17520 B / 15 ms", WindowLimit(17520, 15*time.Millisecond, 0), 9_344_000},
		{"window limit capped by link", WindowLimit(6_553_500, 15*time.Millisecond, 1e9), 1e9},
		{"window limit under link", WindowLimit(17520, 120*time.Millisecond, 1e9), 1_168_000},
		{"relerr", RelErr(8.5, 10), 0.15},
		{"relerr zero/zero", RelErr(0, 0), 0},
		{"relerr over zero", RelErr(1, 0), math.Inf(1)},
	}
	for _, tt := range tests {
		if !near(tt.got, tt.want) && !(math.IsInf(tt.got, 1) && math.IsInf(tt.want, 1)) {
			t.Errorf("%s: got %v, want %v", tt.name, tt.got, tt.want)
		}
	}
}

// frames returns display times every iv from start up to (not including) end.
func frames(start, end, iv time.Duration) []time.Duration {
	var out []time.Duration
	for t := start; t < end; t += iv {
		out = append(out, t)
	}
	return out
}

func concat(parts ...[]time.Duration) []time.Duration {
	var out []time.Duration
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func TestFreezeThreshold(t *testing.T) {
	ms := time.Millisecond
	tests := []struct{ avg, want time.Duration }{
		{33 * ms, 183 * ms},  // 30 fps: avg + 150 ms wins
		{75 * ms, 225 * ms},  // the two rules meet at 75 ms
		{100 * ms, 300 * ms}, // slow video: 3·avg wins
	}
	for _, tt := range tests {
		if got := FreezeThreshold(tt.avg); got != tt.want {
			t.Errorf("FreezeThreshold(%v) = %v, want %v", tt.avg, got, tt.want)
		}
	}
}

func TestFindStalls(t *testing.T) {
	ms, s := time.Millisecond, time.Second
	iv := 33 * ms
	tests := []struct {
		name     string
		display  []time.Duration
		from, to time.Duration
		count    int
		totalMs  float64 // within ±1 ms
		gaps100  int
	}{
		{"smooth 30 fps", frames(0, 10*s, iv), 0, 10 * s, 0, 0, 0},
		{"one freeze of about 500 ms",
			concat(frames(0, 5*s, iv), frames(5*s+500*ms, 10*s, iv)), 0, 10 * s, 1, 517, 1},
		{"117 ms gap: over 100 ms, under the 183 ms threshold",
			concat(frames(0, 4950*ms, iv), frames(4950*ms+117*ms, 10*s, iv)), 0, 10 * s, 0, 0, 1},
		{"frames stop 2 s before the end",
			frames(0, 8*s, 40*ms), 0, 10 * s, 1, 2040, 0},
		{"nothing displayed at all", nil, 0, 10 * s, 1, 10000, 0},
		{"freeze in the warm-up is not counted",
			concat(frames(0, 2*s, iv), frames(3*s, 10*s, iv)), 5 * s, 10 * s, 0, 0, 0},
		{"freeze straddling the window start counts its part inside",
			concat(frames(0, 4*s, 40*ms), frames(6*s, 10*s, 40*ms)), 5 * s, 10 * s, 1, 1000, 0},
		{"empty window", frames(0, s, iv), 2 * s, 2 * s, 0, 0, 0},
	}
	for _, tt := range tests {
		got := FindStalls(tt.display, tt.from, tt.to, iv)
		if got.Count != tt.count || math.Abs(got.TotalMs-tt.totalMs) > 1 || got.Gaps100ms != tt.gaps100 {
			t.Errorf("%s: got count %d total %.1f ms gaps>100ms %d, want %d %.1f ms %d",
				tt.name, got.Count, got.TotalMs, got.Gaps100ms, tt.count, tt.totalMs, tt.gaps100)
		}
		if tt.to > tt.from {
			win := (tt.to - tt.from).Seconds() * 1000
			if !near(got.Rate, got.TotalMs/win) {
				t.Errorf("%s: rate %v, want total/window %v", tt.name, got.Rate, got.TotalMs/win)
			}
		}
	}
}

func TestFramesPerSecond(t *testing.T) {
	s, ms := time.Second, time.Millisecond
	// A warm-up second that is left out, 25 fps for 2 s, nothing for 1 s,
	// 10 fps for 1 s, and a part second at the end that is left out too.
	display := concat(frames(0, s, 20*ms), frames(s, 3*s, 40*ms), frames(4*s, 5*s, 100*ms), frames(5*s, 5500*ms, 10*ms))
	fps := FramesPerSecond(display, s, 5500*ms)
	want := []int{25, 25, 0, 10}
	if len(fps) != len(want) {
		t.Fatalf("FramesPerSecond = %v, want %v", fps, want)
	}
	for i := range want {
		if fps[i] != want[i] {
			t.Fatalf("FramesPerSecond = %v, want %v", fps, want)
		}
	}
}
