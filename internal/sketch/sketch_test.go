package sketch

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/pi2hop/pi2hop/figure"
)

// Each percentile is within the accuracy of figure's exact nearest-rank
// value of the same samples, never above the maximum; count, mean and
// maximum are exact.
func TestQuantileWithinAccuracy(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const acc = 0.01
	s := New(acc)
	var xs []int64
	var sum float64
	for range 20000 {
		v := int64(rng.ExpFloat64() * 5e6) // ns, a queue's long tail
		xs = append(xs, v)
		sum += float64(v)
		s.Add(v)
	}
	slices.Sort(xs)
	for _, p := range []float64{0.01, 0.5, 0.9, 0.99, 0.999, 1} {
		exact, got := figure.Quantile(xs, p), s.Quantile(p)
		if d := float64(got - exact); d > acc*float64(exact)+1 || -d > acc*float64(exact)+1 || got > xs[len(xs)-1] {
			t.Errorf("p%v: %d, exact %d", p*100, got, exact)
		}
	}
	if s.Count() != len(xs) || s.Max() != xs[len(xs)-1] || s.Mean() != sum/float64(len(xs)) {
		t.Errorf("count %d, max %d, mean %v; want %d, %d, %v", s.Count(), s.Max(), s.Mean(), len(xs), xs[len(xs)-1], sum/float64(len(xs)))
	}
	if e := New(acc); e.Quantile(0.5) != 0 || e.Count() != 0 || e.Mean() != 0 {
		t.Error("an empty sketch: want zeros")
	}
}
