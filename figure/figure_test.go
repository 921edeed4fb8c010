package figure

import (
	"math"
	"slices"
	"testing"
	"time"
)

// TestRank pins nearest-rank, ceil(p·n), on small sample counts. Each
// want is worked out by hand from the definition.
func TestRank(t *testing.T) {
	tests := []struct {
		n                   int
		p50, p90, p99, p100 int
	}{
		{1, 1, 1, 1, 1},         // every quantile of one sample is that sample
		{2, 1, 2, 2, 2},         // ceil(1), ceil(1.8), ceil(1.98), 2
		{3, 2, 3, 3, 3},         // ceil(1.5), ceil(2.7), ceil(2.97), 3
		{10, 5, 9, 10, 10},      // ceil(5), ceil(9), ceil(9.9), 10
		{100, 50, 90, 99, 100},  // p99 of 100 is the 99th smallest, not the max
		{101, 51, 91, 100, 101}, // ceil(50.5), ceil(90.9), ceil(99.99), 101
	}
	for _, tt := range tests {
		for _, c := range []struct {
			p    float64
			want int
		}{{0.50, tt.p50}, {0.90, tt.p90}, {0.99, tt.p99}, {1, tt.p100}} {
			if got := Rank(tt.n, c.p); got != c.want {
				t.Errorf("Rank(%d, %v) = %d, want %d", tt.n, c.p, got, c.want)
			}
		}
	}
}

// TestRankEdges: p outside (0, 1], no samples, and decimal p that float
// arithmetic puts just above an integer product.
func TestRankEdges(t *testing.T) {
	tests := []struct {
		n    int
		p    float64
		want int
	}{
		{0, 0.5, 0},
		{-1, 0.5, 0},
		{10, 0, 1},
		{10, -0.5, 1},
		{10, math.NaN(), 1},
		{10, 1.5, 10},
		{100, 0.07, 7},  // 0.07·100 = 7.000000000000001 in float64
		{100, 0.29, 29}, // 0.29·100 = 28.999999999999996
		{1000, 0.999, 999},
		{20, 0.95, 19},
		{7, 0.5, 4},       // ceil(3.5)
		{60, 0.99, 60},    // ceil(59.4): rounding would give 59
		{100, 0.991, 100}, // ceil(99.1)
	}
	for _, tt := range tests {
		if got := Rank(tt.n, tt.p); got != tt.want {
			t.Errorf("Rank(%d, %v) = %d, want %d", tt.n, tt.p, got, tt.want)
		}
	}
}

// seq returns n, n-1, ..., 1 times unit: unsorted, and a sample's value is
// its rank times unit.
func seq(n int, unit float64) []float64 {
	xs := make([]float64, n)
	for i := range xs {
		xs[i] = float64(n-i) * unit
	}
	return xs
}

func TestQuantile(t *testing.T) {
	if got := Quantile([]float64(nil), 0.5); got != 0 {
		t.Errorf("Quantile(nil) = %v, want 0", got)
	}
	// Durations and ints use the same definition.
	ds := []time.Duration{time.Millisecond, 2 * time.Millisecond, 3 * time.Millisecond}
	if got := Quantile(ds, 0.5); got != 2*time.Millisecond {
		t.Errorf("Quantile(1,2,3 ms, 0.5) = %v, want 2ms", got)
	}
	ns := make([]int64, 100)
	for i := range ns {
		ns[i] = int64(i+1) * 10
	}
	if got := Quantile(ns, 0.99); got != 990 {
		t.Errorf("p99 of 10..1000 = %d, want 990 (rank 99)", got)
	}
}

func TestSummarise(t *testing.T) {
	if s := Summarise(nil); s != (Summary{}) {
		t.Errorf("Summarise(nil) = %+v, want zero", s)
	}
	xs := seq(100, 1)
	got := Summarise(xs)
	want := Summary{N: 100, Min: 1, Mean: 50.5, P50: 50, P95: 95, P99: 99, Max: 100}
	if got != want {
		t.Errorf("Summarise(1..100) = %+v, want %+v", got, want)
	}
	if xs[0] != 100 {
		t.Error("Summarise modified its input")
	}
	// 1..10 ×2: p50 rank 5, p95 rank ceil(9.5) = 10, p99 rank ceil(9.9) = 10.
	got = Summarise(seq(10, 2))
	want = Summary{N: 10, Min: 2, Mean: 11, P50: 10, P95: 20, P99: 20, Max: 20}
	if got != want {
		t.Errorf("Summarise(2..20) = %+v, want %+v", got, want)
	}
}

func TestCDF(t *testing.T) {
	d := CDF([]float64{3, 1, 2, 2})
	wantX, wantF := []float64{1, 2, 2, 3}, []float64{0.25, 0.5, 0.75, 1}
	if !slices.Equal(d.X, wantX) || !slices.Equal(d.Share, wantF) || d.N != 4 {
		t.Fatalf("CDF = %+v, want X %v Share %v N 4", d, wantX, wantF)
	}
	if d := CDF(nil); len(d.X) != 0 || len(d.Share) != 0 || d.N != 0 {
		t.Errorf("CDF(nil) = %+v, want empty", d)
	}
}

// TestCurve: 10 samples 1..10 kept as counts give every rank, each at
// its share r/10, the sample of rank r.
func TestCurve(t *testing.T) {
	d := Curve(10, func(q float64) float64 { return q * 10 })
	want := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	if d.N != 10 || len(d.X) != 10 || len(d.Share) != 10 {
		t.Fatalf("Curve(10) = %+v, want 10 points", d)
	}
	for i, x := range want {
		if math.Abs(d.X[i]-x) > 1e-9 || math.Abs(d.Share[i]-x/10) > 1e-12 {
			t.Errorf("point %d = (%g, %g), want (%g, %g)", i, d.X[i], d.Share[i], x, x/10)
		}
	}
	if d := Curve(0, nil); d.N != 0 || d.X != nil {
		t.Errorf("Curve(0) = %+v, want empty", d)
	}
}

func TestMillis(t *testing.T) {
	ms := Millis([]time.Duration{1500 * time.Microsecond, 20 * time.Millisecond})
	if len(ms) != 2 || ms[0] != 1.5 || ms[1] != 20 {
		t.Errorf("Millis = %v, want [1.5 20]", ms)
	}
	if Ms(250*time.Microsecond) != 0.25 {
		t.Errorf("Ms(250µs) = %v, want 0.25", Ms(250*time.Microsecond))
	}
}

func TestFPSShares(t *testing.T) {
	tests := []struct {
		fps        []int
		good, zero float64
	}{
		{[]int{25, 25, 0, 10}, 0.5, 0.25},
		{[]int{30, 24}, 0.5, 0},
		{nil, 0, 0},
	}
	for _, tt := range tests {
		if g, z := FPSShares(tt.fps, 25); g != tt.good || z != tt.zero {
			t.Errorf("FPSShares(%v, 25) = %v, %v, want %v, %v", tt.fps, g, z, tt.good, tt.zero)
		}
	}
}

// TestCurveRanks: 10 samples give every rank (the body's 0.25 % steps
// round up to each); 10⁶ samples give rank n, n−1 (the top decade's
// steps from 10 down to 1 reach 1) and n−9 (m = 10), and no rank twice.
func TestCurveRanks(t *testing.T) {
	if got := CurveRanks(10); !slices.Equal(got, []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}) {
		t.Errorf("CurveRanks(10) = %v, want 1..10", got)
	}
	if got := CurveRanks(0); got != nil {
		t.Errorf("CurveRanks(0) = %v, want none", got)
	}
	const n = 1_000_000
	rs := CurveRanks(n)
	for _, want := range []int{n, n - 1, n - 9, 2500} {
		if !slices.Contains(rs, want) {
			t.Errorf("CurveRanks(%d) lacks rank %d", n, want)
		}
	}
	for i := 1; i < len(rs); i++ {
		if rs[i] <= rs[i-1] {
			t.Fatalf("ranks not strictly ascending at %d: %d after %d", i, rs[i], rs[i-1])
		}
	}
	// 400 body ranks and about 20 a decade over six decades.
	if len(rs) < 400 || len(rs) > 400+20*6+10 {
		t.Errorf("%d ranks, want about 520", len(rs))
	}
}
