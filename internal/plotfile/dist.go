package plotfile

import (
	"math"

	"github.com/pi2hop/pi2hop/figure"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
)

// maxCDFPoints bounds the points drawn per distribution line in its body;
// a call gives tens of thousands of RTT samples and the curve looks the
// same with fewer. The tail (tailPoints largest samples) is drawn whole:
// on a CCDF's log axis every one of them shows.
const (
	maxCDFPoints = 2000
	tailPoints   = 1000
)

// DistPoints turns an empirical distribution, d.X ascending with
// d.Share[i] = r/n the fraction of the n samples at or below X[i] (the
// sample of rank r), into the points of its CDF or, with ccdf, of its
// CCDF: the fraction at or above X[i], (n - r + 1)/n, which ends at 1/n on
// the largest sample, so a log axis shows the tail down to one sample.
// The body is thinned to maxCDFPoints; the tail is kept whole.
func DistPoints(d figure.Dist, ccdf bool) plotter.XYs {
	xs, share, n := d.X, d.Share, d.N
	if len(xs) == 0 || n <= 0 {
		return nil
	}
	step := max(1, len(xs)/maxCDFPoints)
	var pts plotter.XYs
	for i := range xs {
		if i%step != 0 && i < len(xs)-tailPoints && i != len(xs)-1 {
			continue
		}
		y := share[i]
		if ccdf {
			y = math.Max(1-share[i]+1/float64(n), 1/float64(n))
		}
		pts = append(pts, plotter.XY{X: xs[i], Y: y})
	}
	return pts
}

// DistAxis sets a distribution plot's y axis: linear 0..1 for a CDF, log
// from just below the smallest share drawn to 1 for a CCDF.
func DistAxis(p *plot.Plot, ccdf bool, smallest float64) {
	if !ccdf {
		p.Y.Min, p.Y.Max = 0, 1
		return
	}
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	p.Y.Min, p.Y.Max = math.Pow(10, math.Floor(math.Log10(smallest))), 1
}
