package rtt

import (
	"math"
	"testing"
)

func TestHistBuckets(t *testing.T) {
	// Every bucket's values map back to it, and its upper edge is at most
	// 1/16 above its lower edge.
	for i := 1; i < histBuckets-1; i++ {
		lo, up := histUpper(i-1)+1, histUpper(i)
		if histIndex(lo) != i || histIndex(up) != i || histIndex(up+1) != i+1 {
			t.Fatalf("bucket %d [%d, %d]: indices %d %d %d", i, lo, up, histIndex(lo), histIndex(up), histIndex(up+1))
		}
		if float64(up-lo+1) > float64(lo)/16+1 {
			t.Fatalf("bucket %d [%d, %d] wider than 1/16", i, lo, up)
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
	// the 99th. 50 ms = 50e6 ns lies in [2^25, 2^26), sub-bucket
	// (50e6 >> 21) & 15 = 7, whose upper edge is (16+7+1)·2^21 − 1 =
	// 50 331 647 ns. 99 ms lies in [2^26, 2^27), sub-bucket
	// (99e6 >> 22) & 15 = 7, upper edge (16+7+1)·2^22 − 1 = 100 663 295,
	// above the largest sample: capped at 100 ms.
	for i := int64(1); i <= 100; i++ {
		h.Add(i * ms)
	}
	if got := h.Quantile(0.5); got != 50_331_647 {
		t.Errorf("p50 %d, want 50331647", got)
	}
	if got := h.Quantile(0.99); got != 100_000_000 {
		t.Errorf("p99 %d, want 100000000 (the maximum)", got)
	}
	if got := h.Quantile(0.01); got != 1_015_807 {
		// 1 ms = 1e6 ns in [2^19, 2^20), sub (1e6>>15)&15 = 30&15 = 14:
		// upper (16+14+1)·2^15 − 1 = 1 015 807.
		t.Errorf("p1 %d, want 1015807", got)
	}
	if h.N != 100 || h.Max != 100*ms {
		t.Errorf("n %d max %d", h.N, h.Max)
	}
}

func TestSumOf(t *testing.T) {
	c := Summary{N: 3, P50: 2, P99: 5, Max: 6}
	s := Summary{N: 5, P50: 10, P99: 12, Max: 20}
	if got := SumOf(c, s); got != (Summary{N: 3, P50: 12, P99: 17, Max: 26}) {
		t.Errorf("sum %+v", got)
	}
	if got := SumOf(Summary{}, s); got != (Summary{}) {
		t.Errorf("sum with an empty half %+v, want zero", got)
	}
}
