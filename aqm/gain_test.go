package aqm

import (
	"math"
	"testing"
)

// tc sends trunc(Hz·256); sch_dualpi2 takes 1..2^31-1.
func TestGainFromHz(t *testing.T) {
	tests := []struct {
		hz float64
		nl uint32
		ok bool
	}{
		{0.16, 40, true}, // 40.96 truncated, tc's default alpha
		{3.2, 819, true}, // 819.2: tc's default beta
		{1.0 / 256, 1, true},
		{0.0039, 0, false},                  // below 1/256 truncates to 0
		{8388607.99609375, 1<<31 - 1, true}, // (2^31-1)/256 exactly
		{8388608, 0, false},
		{-1, 0, false},
		{math.NaN(), 0, false},
	}
	for _, tc := range tests {
		nl, ok := GainFromHz(tc.hz)
		if nl != tc.nl || ok != tc.ok {
			t.Errorf("GainFromHz(%v) = %d, %v; want %d, %v", tc.hz, nl, ok, tc.nl, tc.ok)
		}
	}
	if MaxGainHz != 8388607 {
		t.Errorf("MaxGainHz %d, want 8388607 ((2^31-1)/256)", MaxGainHz)
	}
}
