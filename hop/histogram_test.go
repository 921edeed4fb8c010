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

// TestHistogramRank: values below 16 ns have exact buckets, so the
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
