package report

import (
	"fmt"
	"path/filepath"
	"sort"

	"github.com/pi2hop/pi2hop/internal/plotfile"
	"github.com/pi2hop/pi2hop/invoker"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/pi2hop/pi2hop/figure"
)

// Plot sizes: wide enough for a 60 s time axis, small enough for a README.
const (
	plotW = 16 * vg.Centimeter
	plotH = 9 * vg.Centimeter
)

// maxCDFPoints bounds the points drawn per CDF line; a call gives tens of
// thousands of RTT samples and the curve looks the same with fewer.
const maxCDFPoints = 2000

// WritePlots draws every plot the report's data allows into dir and
// returns the file names it wrote, in a stable order.
func (r *Report) WritePlots(dir string, owner invoker.User) ([]string, error) {
	var names []string
	save := func(p *plot.Plot, name string) error {
		if err := plotfile.SavePNG(p, plotW, plotH, filepath.Join(dir, name), owner); err != nil {
			return err
		}
		names = append(names, name)
		return nil
	}
	if p, ok := r.rttCDF(); ok {
		if err := save(p, "rtt_cdf.png"); err != nil {
			return names, err
		}
	}
	if p, ok := r.fpsPlot(); ok {
		if err := save(p, "fps.png"); err != nil {
			return names, err
		}
	}
	for i := range r.Runs {
		run := &r.Runs[i]
		if p, ok := queueDelayPlot(run); ok {
			if err := save(p, "queue_delay_"+run.Name+".png"); err != nil {
				return names, err
			}
		}
		if p, ok := throughputPlot(run); ok {
			if err := save(p, "throughput_"+run.Name+".png"); err != nil {
				return names, err
			}
		}
	}
	if p, ok := r.bdpPlot(); ok {
		if err := save(p, "bdp.png"); err != nil {
			return names, err
		}
	}
	return names, nil
}

func newPlot(title, x, y string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = x
	p.Y.Label.Text = y
	p.Add(plotter.NewGrid())
	p.Legend.Top = true
	return p
}

// headroom raises the y axis so the legend, top right, does not cover
// the lines.
func headroom(p *plot.Plot) {
	p.Y.Min = 0
	p.Y.Max *= 1.35
}

// addLine adds one styled line; i picks the colour and dash pattern.
func addLine(p *plot.Plot, i int, label string, xys plotter.XYs) error {
	l, err := plotter.NewLine(xys)
	if err != nil {
		return err
	}
	l.Color = plotutil.Color(i)
	l.Dashes = plotutil.Dashes(i / 7)
	l.Width = vg.Points(1.2)
	p.Add(l)
	p.Legend.Add(label, l)
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

func (r *Report) rttCDF() (*plot.Plot, bool) {
	p := newPlot("Round-trip time, CDF", "RTT (ms)", "fraction of samples ≤ x")
	n := 0
	for _, run := range r.Runs {
		for _, label := range sortedKeys(run.RTTMs) {
			xs, fs := figure.CDF(run.RTTMs[label])
			if len(xs) == 0 {
				continue
			}
			step := max(1, len(xs)/maxCDFPoints)
			var pts plotter.XYs
			for i := 0; i < len(xs); i += step {
				pts = append(pts, plotter.XY{X: xs[i], Y: fs[i]})
			}
			pts = append(pts, plotter.XY{X: xs[len(xs)-1], Y: 1})
			name := run.Title
			if len(run.RTTMs) > 1 {
				name += ": " + label
			}
			if addLine(p, n, name, pts) == nil {
				n++
			}
		}
	}
	p.Y.Min, p.Y.Max = 0, 1
	p.Legend.Top = false // the curves rise on the left and end top right
	p.Legend.XOffs = -vg.Millimeter
	p.Legend.YOffs = 2 * vg.Millimeter
	return p, n > 0
}

func (r *Report) fpsPlot() (*plot.Plot, bool) {
	p := newPlot("Received video frame rate", "time after warm-up (s)", "frames displayed per second")
	n := 0
	for _, run := range r.Runs {
		if run.Call == nil || len(run.Call.FPS) == 0 {
			continue
		}
		var pts plotter.XYs
		for k, f := range run.Call.FPS {
			pts = append(pts, plotter.XY{X: float64(k), Y: float64(f)}, plotter.XY{X: float64(k + 1), Y: float64(f)})
		}
		if addLine(p, n, run.Title, pts) == nil {
			n++
		}
	}
	headroom(p)
	return p, n > 0
}

func queueDelayPlot(run *Run) (*plot.Plot, bool) {
	s := run.Series
	if s.QueueBinS <= 0 || len(s.QueueDelayMs) == 0 {
		return nil, false
	}
	// The warm-up is left out: slow start's overshoot would set the scale.
	p := newPlot("Queue delay per queue: "+run.Title, "time (s; warm-up left out)",
		fmt.Sprintf("median sojourn per %.0f ms (ms)", s.QueueBinS*1000))
	n := 0
	for _, q := range sortedKeys(s.QueueDelayMs) {
		var pts plotter.XYs
		for k, d := range s.QueueDelayMs[q] {
			x := float64(k) * s.QueueBinS
			if k < len(s.QueueT) {
				x = s.QueueT[k]
			}
			if x >= run.WarmupS {
				pts = append(pts, plotter.XY{X: x, Y: d})
			}
		}
		if len(pts) > 0 && addLine(p, n, q+"-queue", pts) == nil {
			n++
		}
	}
	headroom(p)
	return p, n > 0
}

func throughputPlot(run *Run) (*plot.Plot, bool) {
	if len(run.Series.Throughput) == 0 {
		return nil, false
	}
	p := newPlot("Throughput per flow: "+run.Title, "time (s)", "goodput per second (Mbit/s)")
	n := 0
	for _, label := range sortedKeys(run.Series.Throughput) {
		var pts plotter.XYs
		for k, bps := range run.Series.Throughput[label] {
			pts = append(pts, plotter.XY{X: float64(k) + 0.5, Y: bps / 1e6})
		}
		if len(pts) > 0 && addLine(p, n, label, pts) == nil {
			n++
		}
	}
	headroom(p)
	return p, n > 0
}

func (r *Report) bdpPlot() (*plot.Plot, bool) {
	if len(r.BDP) == 0 {
		return nil, false
	}
	p := newPlot("Window-limited TCP: window / RTT vs measured", "RTT (ms)", "throughput (Mbit/s)")
	byWin := map[string][]BDPRow{}
	for _, b := range r.BDP {
		k := fmt.Sprintf("%d B", b.WindowBytes)
		byWin[k] = append(byWin[k], b)
	}
	n := 0
	for _, k := range sortedKeys(byWin) {
		rows := byWin[k]
		sort.Slice(rows, func(i, j int) bool { return rows[i].RTTMs < rows[j].RTTMs })
		var pred, meas plotter.XYs
		for _, b := range rows {
			pred = append(pred, plotter.XY{X: b.RTTMs, Y: b.PredictedBps / 1e6})
			meas = append(meas, plotter.XY{X: b.RTTMs, Y: b.MeasuredBps / 1e6})
		}
		if addLine(p, n, "predicted, window "+k, pred) != nil {
			continue
		}
		s, err := plotter.NewScatter(meas)
		if err != nil {
			continue
		}
		s.Color = plotutil.Color(n)
		s.Shape = plotutil.Shape(n)
		p.Add(s)
		p.Legend.Add("measured, window "+k, s)
		n++
	}
	positive := true
	for _, b := range r.BDP {
		positive = positive && b.PredictedBps > 0 && b.MeasuredBps > 0
	}
	if positive { // the two windows differ by 400×: only a log axis shows both
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = plot.LogTicks{}
	}
	return p, n > 0
}
