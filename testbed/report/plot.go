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

// Plot sizes of the data area (a legend goes beside it): wide enough
// for a 60 s time axis, small enough for a README.
const (
	plotW = 16 * vg.Centimeter
	plotH = 9 * vg.Centimeter
)

// chart is one plot and what its series stand for, so a test can check
// that a class has one colour across a report.
type chart struct {
	name   string // file name without the extension
	p      *plot.Plot
	series []drawn
}

// drawn is one line or set of points of a plot: its legend label, the
// class its colour stands for and its line style.
type drawn struct {
	Label string
	Class plotfile.Class
	Style int
}

// line adds one styled line to c.
func (c *chart) line(label string, class plotfile.Class, style int, xys plotter.XYs) error {
	l, err := plotter.NewLine(xys)
	if err != nil {
		return err
	}
	plotfile.Style(&l.LineStyle, class, style)
	c.p.Add(l)
	c.p.Legend.Add(label, l)
	c.series = append(c.series, drawn{Label: label, Class: class, Style: style})
	return nil
}

// WritePlots draws every plot the report's data allows into dir, in each
// of formats (nil: plotfile.DefaultFormats), and returns the file names
// it wrote, in a stable order.
func (r *Report) WritePlots(dir string, formats plotfile.Formats, owner invoker.User) ([]string, error) {
	var names []string
	for _, c := range r.charts() {
		files, err := plotfile.Save(c.p, plotW, plotH, filepath.Join(dir, c.name), formats, owner)
		for _, f := range files {
			names = append(names, filepath.Base(f))
		}
		if err != nil {
			return names, err
		}
	}
	return names, nil
}

// charts builds every plot the report's data allows, in file order.
func (r *Report) charts() []*chart {
	var cs []*chart
	add := func(c *chart, ok bool) {
		if ok {
			cs = append(cs, c)
		}
	}
	rtt, sojourn := r.runStyles(rttClasses), r.runStyles(sojournClasses)
	add(r.rttDist(rtt, false))
	add(r.rttDist(rtt, true))
	add(r.sojournDist(sojourn, false))
	add(r.sojournDist(sojourn, true))
	add(r.fpsPlot(r.runStyles(callClasses)))
	for i := range r.Runs {
		run := &r.Runs[i]
		add(queueDelayPlot(run, plotfile.AQMStyle(run.AQM)))
		add(throughputPlot(run))
	}
	add(r.bdpPlot())
	return cs
}

// runStyles gives each run its line style in a plot across runs: the
// style of its AQM, unless an earlier run drawn in that style has a series
// of the same class in the plot (two DualPI2 runs' L queues, two Prague
// runs at two rates), which moves it to the first style of no AQM's that
// is free for its classes. classes gives a run's series' classes.
func (r *Report) runStyles(classes func(*Run) map[plotfile.Class]bool) []int {
	styles := make([]int, len(r.Runs))
	taken := map[int]map[plotfile.Class]bool{}
	for i := range r.Runs {
		cs := classes(&r.Runs[i])
		s := plotfile.AQMStyle(r.Runs[i].AQM)
		if clash(taken[s], cs) {
			s = plotfile.VariantStyles
			for clash(taken[s], cs) {
				s++
			}
		}
		if taken[s] == nil {
			taken[s] = map[plotfile.Class]bool{}
		}
		for c := range cs {
			taken[s][c] = true
		}
		styles[i] = s
	}
	return styles
}

// rttClasses are the classes of a run's RTT lines.
func rttClasses(run *Run) map[plotfile.Class]bool {
	cs := map[plotfile.Class]bool{}
	for label := range run.RTTMs {
		cs[flowClass(run, label)] = true
	}
	for label := range run.RTTDist {
		cs[flowClass(run, label)] = true
	}
	return cs
}

// rttDists are a run's RTT distributions by flow label: its samples'
// and those it keeps as counts.
func (run *Run) rttDists() map[string]figure.Dist {
	d := map[string]figure.Dist{}
	for label, ms := range run.RTTMs {
		d[label] = figure.CDF(ms)
	}
	for label, dist := range run.RTTDist {
		d[label] = dist
	}
	return d
}

// sojournClasses are the classes of a run's sojourn lines.
func sojournClasses(run *Run) map[plotfile.Class]bool {
	cs := map[plotfile.Class]bool{}
	for q := range run.SojournDist {
		cs[queueClass(run, q)] = true
	}
	return cs
}

// callClasses is the class of a run's frame-rate line.
func callClasses(run *Run) map[plotfile.Class]bool {
	if run.Call == nil {
		return nil
	}
	return map[plotfile.Class]bool{plotfile.ClassOfECN(run.Call.ECN): true}
}

func clash(taken, classes map[plotfile.Class]bool) bool {
	for c := range classes {
		if taken[c] {
			return true
		}
	}
	return false
}

// flowClass is the class of run's flow label.
func flowClass(run *Run, label string) plotfile.Class {
	for _, f := range run.Flows {
		if f.Label == label {
			return plotfile.ClassOfECN(f.ECN)
		}
	}
	return plotfile.Other
}

// queueClass is the class of run's queue name: the L queue holds L4S
// traffic, the C queue Classic, and a FIFO's one queue every packet.
func queueClass(run *Run, name string) plotfile.Class {
	switch {
	case run.AQM == "fifo":
		return plotfile.Other
	case name == "L":
		return plotfile.L4S
	case name == "C":
		return plotfile.Classic
	}
	return plotfile.Other
}

// queueName names run's queue in a legend: a FIFO's one queue is no C
// queue.
func queueName(run *Run, name string) string {
	if run.AQM == "fifo" {
		return "FIFO queue"
	}
	return name + " queue"
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

func distTitle(what string, ccdf bool) (title, y, suffix string) {
	if ccdf {
		return what + ", CCDF (tail on a log axis)", "fraction of samples ≥ x", "_ccdf"
	}
	return what + ", CDF", "fraction of samples ≤ x", "_cdf"
}

// rttDist is the RTT CDF or CCDF of every flow with RTT samples, across runs.
func (r *Report) rttDist(styles []int, ccdf bool) (*chart, bool) {
	title, y, suffix := distTitle("Round-trip time", ccdf)
	c := &chart{name: "rtt" + suffix, p: plotfile.New(title, "RTT (ms)", y)}
	smallest := 1.0
	for i, run := range r.Runs {
		dists := run.rttDists()
		for _, label := range sortedKeys(dists) {
			d := dists[label]
			pts := plotfile.DistPoints(d, ccdf)
			if len(pts) == 0 {
				continue
			}
			name := run.Title
			if len(dists) > 1 {
				name += ": " + label
			}
			if c.line(name, flowClass(&run, label), styles[i], pts) == nil {
				smallest = min(smallest, 1/float64(d.N))
			}
		}
	}
	plotfile.DistAxis(c.p, ccdf, smallest)
	return c, len(c.series) > 0
}

// sojournDist is each queue's sojourn CDF or CCDF, across runs.
func (r *Report) sojournDist(styles []int, ccdf bool) (*chart, bool) {
	title, y, suffix := distTitle("Queue sojourn per queue", ccdf)
	c := &chart{name: "sojourn" + suffix, p: plotfile.New(title, "sojourn (ms)", y)}
	smallest := 1.0
	for i, run := range r.Runs {
		for _, q := range sortedKeys(run.SojournDist) {
			d := run.SojournDist[q]
			pts := plotfile.DistPoints(d, ccdf)
			if len(pts) == 0 {
				continue
			}
			if c.line(run.Title+": "+queueName(&run, q), queueClass(&run, q), styles[i], pts) == nil {
				smallest = min(smallest, 1/float64(d.N))
			}
		}
	}
	plotfile.DistAxis(c.p, ccdf, smallest)
	return c, len(c.series) > 0
}

// timeAxis sets a time plot's x axis to the run's traffic time, seconds
// since its start, with the warm-up shaded, and its y axis from 0 to a
// little above the largest value, so a line at the maximum is not hidden
// in the frame.
func timeAxis(p *plot.Plot, durationS, warmupS float64) {
	plotfile.ShadeWarmup(p, warmupS)
	p.X.Min = 0
	if durationS > 0 {
		p.X.Max = durationS
	}
	p.Y.Min = 0
	p.Y.Max *= 1.08
}

// timeLabel is every time plot's x axis label.
const timeLabel = "time since the run's start (s)"

func (r *Report) fpsPlot(styles []int) (*chart, bool) {
	c := &chart{name: "fps", p: plotfile.New("Received video frame rate", timeLabel, "frames displayed per second")}
	var dur, warm float64
	for i, run := range r.Runs {
		if run.Call == nil || len(run.Series.FPS) == 0 {
			continue
		}
		dur, warm = max(dur, run.DurationS), max(warm, run.WarmupS)
		// Window k covers [k, k+1) s: a step per window.
		var pts plotter.XYs
		for k, f := range run.Series.FPS {
			pts = append(pts, plotter.XY{X: float64(k), Y: float64(f)}, plotter.XY{X: float64(k + 1), Y: float64(f)})
		}
		_ = c.line(run.Title, plotfile.ClassOfECN(run.Call.ECN), styles[i], pts)
	}
	timeAxis(c.p, dur, warm)
	return c, len(c.series) > 0
}

func queueDelayPlot(run *Run, style int) (*chart, bool) {
	s := run.Series
	if s.QueueBinS <= 0 || len(s.QueueDelayMs) == 0 {
		return nil, false
	}
	c := &chart{name: "queue_delay_" + run.Name, p: plotfile.New("Queue delay per queue: "+run.Title, timeLabel,
		fmt.Sprintf("median sojourn per %.0f ms (ms)", s.QueueBinS*1000))}
	top := 0.0
	for _, q := range sortedKeys(s.QueueDelayMs) {
		var pts plotter.XYs
		for k, d := range s.QueueDelayMs[q] {
			x := float64(k+1) * s.QueueBinS
			if k < len(s.QueueT) {
				x = s.QueueT[k]
			}
			// 0 is a bin in which the queue forwarded nothing: no
			// sojourn to show, not a sojourn of 0. Past the traffic
			// time the queue only drains.
			if d <= 0 || (run.DurationS > 0 && x > run.DurationS) {
				continue
			}
			pts = append(pts, plotter.XY{X: x, Y: d})
			if x >= run.WarmupS {
				top = max(top, d)
			}
		}
		if len(pts) > 0 {
			_ = c.line(queueName(run, q), queueClass(run, q), style, pts)
		}
	}
	timeAxis(c.p, run.DurationS, run.WarmupS)
	// The scale is the measured time's: slow start's overshoot in the
	// warm-up would squash it, so it is cut off at the top.
	if top > 0 {
		c.p.Y.Max = top * 1.1
	}
	return c, len(c.series) > 0
}

// throughputPlot shows each flow's goodput per second of the run. Flows
// of one class differ by line style, in label order.
func throughputPlot(run *Run) (*chart, bool) {
	if len(run.Series.Throughput) == 0 {
		return nil, false
	}
	c := &chart{name: "throughput_" + run.Name, p: plotfile.New("Throughput per flow: "+run.Title, timeLabel,
		"goodput per second (Mbit/s)")}
	perClass := map[plotfile.Class]int{}
	for _, label := range sortedKeys(run.Series.Throughput) {
		var pts plotter.XYs
		// Bin k covers [k, k+1) s; drawn at its middle.
		for k, bps := range run.Series.Throughput[label] {
			pts = append(pts, plotter.XY{X: float64(k) + 0.5, Y: bps / 1e6})
		}
		if len(pts) == 0 {
			continue
		}
		class := flowClass(run, label)
		if c.line(label, class, perClass[class], pts) == nil {
			perClass[class]++
		}
	}
	timeAxis(c.p, run.DurationS, run.WarmupS)
	return c, len(c.series) > 0
}

// bdpPlot: the window-limited flows are Classic (Not-ECT cubic); the two
// windows differ by line style and marker.
func (r *Report) bdpPlot() (*chart, bool) {
	if len(r.BDP) == 0 {
		return nil, false
	}
	c := &chart{name: "bdp", p: plotfile.New("Window-limited TCP: window / RTT vs measured", "RTT (ms)", "throughput (Mbit/s)")}
	byWin := map[string][]BDPRow{}
	for _, b := range r.BDP {
		k := fmt.Sprintf("%d B", b.WindowBytes)
		byWin[k] = append(byWin[k], b)
	}
	for n, k := range sortedKeys(byWin) {
		rows := byWin[k]
		sort.Slice(rows, func(i, j int) bool { return rows[i].RTTMs < rows[j].RTTMs })
		var pred, meas plotter.XYs
		for _, b := range rows {
			pred = append(pred, plotter.XY{X: b.RTTMs, Y: b.PredictedBps / 1e6})
			meas = append(meas, plotter.XY{X: b.RTTMs, Y: b.MeasuredBps / 1e6})
		}
		if c.line("predicted, window "+k, plotfile.Classic, n, pred) != nil {
			continue
		}
		s, err := plotter.NewScatter(meas)
		if err != nil {
			continue
		}
		s.Color = plotfile.Classic.Colour()
		s.Shape = plotutil.Shape(n)
		c.p.Add(s)
		c.p.Legend.Add("measured, window "+k, s)
		c.series = append(c.series, drawn{Label: "measured, window " + k, Class: plotfile.Classic, Style: n})
	}
	positive := true
	for _, b := range r.BDP {
		positive = positive && b.PredictedBps > 0 && b.MeasuredBps > 0
	}
	if positive { // the two windows differ by 400×: only a log axis shows both
		c.p.Y.Scale = plot.LogScale{}
		c.p.Y.Tick.Marker = plot.LogTicks{}
	}
	return c, len(c.series) > 0
}
