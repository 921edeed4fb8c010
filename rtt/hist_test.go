package rtt

import (
	"math"
	"testing"
)

func TestHistBuckets(t *testing.T) {
	// Every bucket's values map back to it, and it is at most 1/64 of its
	// lower edge wide.
	for i := 1; i < histBuckets-1; i++ {
		lo, up := histUpper(i-1)+1, histUpper(i)
		if histIndex(lo) != i || histIndex(up) != i || histIndex(up+1) != i+1 {
			t.Fatalf("bucket %d [%d, %d]: indices %d %d %d", i, lo, up, histIndex(lo), histIndex(up), histIndex(up+1))
		}
		if float64(up-lo+1) > float64(lo)/64+1 {
			t.Fatalf("bucket %d [%d, %d] wider than 1/64", i, lo, up)
		}
	}
	if histIndex(math.MaxInt64) != histBuckets-1 || histIndex(-5) != 0 {
		t.Fatal("out-of-range values not in the end buckets")
	}
}

func TestHistQuantile(t *testing.T) {
	var h Hist
	if h.Quantile(0.5) != 0 {
		t.Fatal("empty histogram: want 0")
	}
	// 100 samples, 1..100 ms. Nearest rank: p50 is the 50th sample, p99
	// the 99th, p1 the 1st. A sample v in [2^e, 2^(e+1)) lies in the
	// bucket [k·2^(e-6), (k+1)·2^(e-6) − 1] with k = v >> (e-6); its
	// middle is the lower edge plus half the width, rounded down.
	// 50 ms: e = 25, k = 95, [49 807 360, 50 331 647], middle 50 069 503.
	// 99 ms: e = 26, k = 94, [98 566 144, 99 614 719], middle 99 090 431.
	// 1 ms: e = 19, k = 122, [999 424, 1 007 615], middle 1 003 519.
	for i := int64(1); i <= 100; i++ {
		h.Add(i * ms)
	}
	for _, c := range []struct {
		q    float64
		want int64
	}{{0.5, 50_069_503}, {0.99, 99_090_431}, {0.01, 1_003_519}, {1, 100_000_000}} {
		if got := h.Quantile(c.q); got != c.want {
			t.Errorf("q %v: %d, want %d", c.q, got, c.want)
		}
	}
	// A bucket whose middle lies above the largest sample gives the
	// largest sample: 100 ms alone, e = 26, k = 95, middle 100 139 007.
	var one Hist
	one.Add(100 * ms)
	if got := one.Quantile(0.5); got != 100*ms {
		t.Errorf("one sample of 100 ms: p50 %d, want the maximum", got)
	}
	if h.N != 100 || h.Max != 100*ms {
		t.Errorf("n %d max %d", h.N, h.Max)
	}
}

func TestSumOfHalves(t *testing.T) {
	c := summary{n: 3, p50: 2, p99: 5, max: 6}
	s := summary{n: 5, p50: 10, p99: 12, max: 20}
	if got := sumOf(c, s); got != (summary{n: 3, p50: 12, p99: 17, max: 26}) {
		t.Errorf("sum %+v", got)
	}
	if got := sumOf(summary{}, s); got != (summary{}) {
		t.Errorf("sum with an empty half %+v, want zero", got)
	}
}

func TestHistMergeAndMean(t *testing.T) {
	var a, b Hist
	for _, ms := range []int64{10, 20, 30} {
		a.Add(ms * 1e6)
	}
	b.Add(40e6)
	a.Merge(&b)
	// 10, 20, 30, 40 ms: nearest-rank p50 is 20 ms, the maximum 40 ms, the
	// mean 25 ms; each within a bucket's half width, 0.8 %.
	if a.N != 4 || a.Max != 40e6 {
		t.Fatalf("merged: n %d, max %d", a.N, a.Max)
	}
	near := func(got, want float64) bool { return math.Abs(got-want) <= 0.008*want }
	if p := float64(a.Quantile(0.5)); !near(p, 20e6) {
		t.Errorf("p50 %v, want 20 ms within 0.8 %%", p)
	}
	if m := a.Mean(); !near(m, 25e6) {
		t.Errorf("mean %v, want 25 ms within 0.8 %%", m)
	}
	var empty Hist
	if empty.Mean() != 0 {
		t.Error("mean of nothing")
	}
}
