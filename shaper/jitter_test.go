package shaper

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// Jitter never reorders: releases follow the send order and are never
// earlier than departure + max(delay + variation, 0), for every
// distribution, with packets closer together than the variation.
func TestJitterNeverReorders(t *testing.T) {
	for _, d := range []Dist{DistUniform, DistNormal, DistPareto, DistParetoNormal} {
		l := newTestLink(t, Config{Rate: Const{BitsPerSecond: 100_000_000}, Delay: 20 * ms,
			Jitter: Jitter{Amount: 10 * ms, Dist: d}}, newFakeQueue())
		var arr []arrival
		for i := range 5000 {
			arr = append(arr, arrival{at: int64(i) * 200_000, len: 1000})
		}
		evs := drive(t, l, arr, nil)
		if len(evs) != len(arr) {
			t.Fatalf("%v: %d events for %d packets", d, len(evs), len(arr))
		}
		bumped := 0
		for i, e := range evs {
			if int(e.Meta.Slot) != i {
				t.Fatalf("%v: event %d is packet %d: reordered", d, i, e.Meta.Slot)
			}
			if e.At < e.Dep {
				t.Fatalf("%v: packet %d released at %d before it left the link at %d", d, i, e.At, e.Dep)
			}
			if i > 0 && e.At == evs[i-1].At {
				bumped++
			}
		}
		if bumped == 0 {
			t.Errorf("%v: no packet held back behind its predecessor: the variation does not reach the gap", d)
		}
	}
}

// The variation has the distribution's shape, checked by its quartiles
// (a heavy tail makes moments converge too slowly to test): uniform on
// ±J has quartiles −J/2, 0, J/2; normal with deviation J ±0.6745·J;
// Pareto(3), x = u^(−1/3), normalised by its mean 1.5 and deviation
// √0.75: quartiles (0.75^(−1/3) − 1.5)/√0.75 = −0.4608, (2^(1/3) −
// 1.5)/√0.75 = −0.2772, (4^(1/3) − 1.5)/√0.75 = 0.1005 (times J). The
// Pareto-normal mix leans the same way: its median is below 0.
func TestJitterDistributions(t *testing.T) {
	const n = 20001
	const j = 2_000_000.0 // ns
	for _, tc := range []struct {
		d    Dist
		want [3]float64 // quartiles / J; NaN: not checked
	}{
		{DistUniform, [3]float64{-0.5, 0, 0.5}},
		{DistNormal, [3]float64{-0.6745, 0, 0.6745}},
		{DistPareto, [3]float64{-0.4608, -0.2772, 0.1005}},
		{DistParetoNormal, [3]float64{math.NaN(), math.NaN(), math.NaN()}},
	} {
		jit := Jitter{Amount: int64(j), Dist: tc.d}
		rng := rand.New(rand.NewPCG(9, 9))
		v := make([]float64, n)
		for i := range v {
			v[i] = float64(jit.Sample(rng))
			if tc.d == DistUniform && (v[i] < -j || v[i] > j) {
				t.Fatalf("uniform sample %v outside ±%v", v[i], j)
			}
		}
		slices.Sort(v)
		q := [3]float64{v[n/4] / j, v[n/2] / j, v[3*n/4] / j}
		for i, w := range tc.want {
			if !math.IsNaN(w) && math.Abs(q[i]-w) > 0.03 {
				t.Errorf("%v: quartile %d at %.4f·J, want %.4f·J", tc.d, i+1, q[i], w)
			}
		}
		if tc.d == DistParetoNormal && q[1] >= 0 {
			t.Errorf("paretonormal: median %.4f·J, want below 0 (the Pareto part's skew)", q[1])
		}
	}
	if (Jitter{}).Sample(nil) != 0 {
		t.Error("zero jitter drew a value")
	}
}

// The same seed gives the same releases; SetJitter applies from the next
// packet; a negative amount is refused.
func TestJitterSeededAndLive(t *testing.T) {
	run := func() []int64 {
		l := newTestLink(t, Config{Rate: Const{BitsPerSecond: 10_000_000}, Delay: 5 * ms,
			Jitter: Jitter{Amount: ms, Dist: DistNormal}}, newFakeQueue())
		var arr []arrival
		for i := range 200 {
			arr = append(arr, arrival{at: int64(i) * 3 * ms, len: 500})
		}
		var ats []int64
		for _, e := range drive(t, l, arr, nil) {
			ats = append(ats, e.At)
		}
		return ats
	}
	a, b := run(), run()
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("packet %d: released at %d and %d with the same seed", i, a[i], b[i])
		}
	}
	l := newTestLink(t, Config{Rate: Const{BitsPerSecond: 10_000_000}}, newFakeQueue())
	if err := l.SetJitter(Jitter{Amount: -1}); err == nil {
		t.Error("negative jitter accepted")
	}
	if err := l.SetJitter(Jitter{Amount: ms, Dist: DistPareto}); err != nil || l.Jitter().Dist != DistPareto {
		t.Errorf("SetJitter: %v, %v", err, l.Jitter())
	}
	if _, err := ParseDist("gamma"); err == nil {
		t.Error(`ParseDist("gamma") accepted`)
	}
	if d, err := ParseDist("paretonormal"); err != nil || d != DistParetoNormal {
		t.Errorf("ParseDist(paretonormal) = %v, %v", d, err)
	}
}
