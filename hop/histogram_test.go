package hop

import "testing"

func TestHistogramBucketsCoverTheirValues(t *testing.T) {
	for _, v := range []int64{0, 1, 15, 16, 17, 31, 32, 33, 1000, 999_999, 1_000_000, 20_000_000, 1 << 35} {
		i := histIndex(v)
		if up := histUpper(i); up < v {
			t.Errorf("value %d: bucket %d ends at %d", v, i, up)
		}
		if i > 0 && histUpper(i-1) >= v {
			t.Errorf("value %d: previous bucket %d already ends at %d", v, i-1, histUpper(i-1))
		}
	}
}

func TestHistogramQuantiles(t *testing.T) {
	var h Histogram
	for v := int64(1); v <= 1000; v++ {
		h.Add(v * 1000) // 1 µs .. 1 ms
	}
	tests := []struct {
		q    float64
		want int64
	}{{0.5, 500_000}, {0.99, 990_000}, {1, 1_000_000}}
	for _, tt := range tests {
		got := h.Quantile(tt.q)
		if got < tt.want || float64(got) > float64(tt.want)*1.07 {
			t.Errorf("Quantile(%v) = %d, want %d within +7%%", tt.q, got, tt.want)
		}
	}
	earlier := h
	for i := 0; i < 100; i++ {
		h.Add(5_000_000)
	}
	d := h.Sub(&earlier)
	if d.Total != 100 || d.Quantile(0.5) < 5_000_000 || d.Quantile(0.5) > 5_400_000 {
		t.Errorf("interval: total %d p50 %d, want 100 around 5 ms", d.Total, d.Quantile(0.5))
	}
	var empty Histogram
	if empty.Quantile(0.99) != 0 {
		t.Errorf("empty histogram quantile not 0")
	}
}

// TestHistogramRank: values below 64 ns have exact buckets, so the
// quantile is the nearest-rank sample itself, ceil(q·n)-th smallest.
func TestHistogramRank(t *testing.T) {
	var ten, four Histogram
	for v := int64(1); v <= 10; v++ {
		ten.Add(v)
	}
	for v := int64(1); v <= 4; v++ {
		four.Add(v)
	}
	tests := []struct {
		h    *Histogram
		q    float64
		want int64
	}{
		{&ten, 0.5, 5},   // ceil(5)
		{&ten, 0.9, 9},   // ceil(9)
		{&ten, 0.99, 10}, // ceil(9.9)
		{&ten, 0, 1},     // the minimum
		{&four, 0.6, 3},  // ceil(2.4): rounding would give 2
	}
	for _, tt := range tests {
		if got := tt.h.Quantile(tt.q); got != tt.want {
			t.Errorf("%d samples: Quantile(%v) = %d, want %d", tt.h.Total, tt.q, got, tt.want)
		}
	}
}

// TestHistogramResolution: above the exact buckets every bucket spans at
// most 1/64 of its lowest value, and the buckets around the lab's Prague
// bound (2.6 ms) end where the layout puts them: 2.5 ms lies in
// [76·2^15, 77·2^15) ns, 2.6 ms in [79·2^15, 80·2^15).
func TestHistogramResolution(t *testing.T) {
	for i := histSub; i < histBuckets; i++ {
		lo, hi := histUpper(i-1)+1, histUpper(i)
		if 64*(hi-lo+1) > lo {
			t.Fatalf("bucket %d spans %d..%d ns: wider than 1/64 of %d", i, lo, hi, lo)
		}
	}
	for _, tt := range []struct{ v, upper int64 }{
		{2_500_000, 77<<15 - 1}, {2_600_000, 80<<15 - 1}, {63, 63}, {64, 64}, {1<<36 + 1, (64+1)<<30 - 1},
	} {
		if got := histUpper(histIndex(tt.v)); got != tt.upper {
			t.Errorf("value %d ns: bucket ends at %d, want %d", tt.v, got, tt.upper)
		}
	}
}

// TestHistogramQuantileCappedAtMax: 1 ms lies in the bucket
// [122·2^13, 123·2^13) = [999 424, 1 007 616) ns, whose upper edge,
// 1 007 615 ns, is above every sample; the quantile stops at the measured
// 1 000 000 when that is the maximum. Over an interval (Sub) the cap is
// the interval's own maximum, not the run's.
func TestHistogramQuantileCappedAtMax(t *testing.T) {
	var h Histogram
	h.Add(2_000_000)
	h.Close()
	before := h
	for range 100 {
		h.Add(1_000_000)
	}
	h.Close()
	iv := h.Sub(&before)
	var uncapped Histogram
	uncapped.Counts[histIndex(1_000_000)] = 100
	uncapped.Total = 100
	tests := []struct {
		name    string
		h       *Histogram
		q       float64
		want    int64
		wantMax int64
	}{
		{"run p50: the edge, below the run's 2 ms", &h, 0.5, 1_007_615, 2_000_000},
		{"run p100", &h, 1, 2_000_000, 2_000_000},
		{"interval p99", &iv, 0.99, 1_000_000, 1_000_000},
		{"interval p50", &iv, 0.5, 1_000_000, 1_000_000},
		{"counts without a maximum", &uncapped, 0.99, 1_007_615, 0},
	}
	for _, tt := range tests {
		if got := tt.h.Quantile(tt.q); got != tt.want {
			t.Errorf("%s: Quantile(%v) = %d, want %d", tt.name, tt.q, got, tt.want)
		}
		if got := tt.h.Max(); got != tt.wantMax {
			t.Errorf("%s: Max() = %d, want %d", tt.name, got, tt.wantMax)
		}
	}
}
