package plotfile

import (
	"math"
	"testing"

	"github.com/pi2hop/pi2hop/figure"
)

// TestDistPoints: four samples 1..4 ms. The CDF is the share at or
// below each, the CCDF the share at or above: 1, 3/4, 1/2, 1/4.
func TestDistPoints(t *testing.T) {
	xs, share := []float64{1, 2, 3, 4}, []float64{0.25, 0.5, 0.75, 1}
	for _, tt := range []struct {
		ccdf bool
		want []float64
	}{
		{false, []float64{0.25, 0.5, 0.75, 1}},
		{true, []float64{1, 0.75, 0.5, 0.25}},
	} {
		pts := DistPoints(figure.Dist{X: xs, Share: share, N: 4}, tt.ccdf)
		if len(pts) != 4 {
			t.Fatalf("ccdf %v: %d points, want 4", tt.ccdf, len(pts))
		}
		for i, p := range pts {
			if p.X != xs[i] || math.Abs(p.Y-tt.want[i]) > 1e-12 {
				t.Errorf("ccdf %v: point %d = (%g, %g), want (%g, %g)", tt.ccdf, i, p.X, p.Y, xs[i], tt.want[i])
			}
		}
	}
}
