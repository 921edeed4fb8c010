package report

import (
	"image/color"
	"math"
	"strings"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/pi2hop/pi2hop/internal/plotfile"
)

// reportColours tell the reports apart in a comparison's bars; the class
// colours (L4S blue, Classic vermillion) are left out, as a bar here is a
// report, not a class. Okabe and Ito's set, as the class colours.
var reportColours = []color.RGBA{
	{R: 0x00, G: 0x9e, B: 0x73, A: 0xff}, // bluish green
	{R: 0xcc, G: 0x79, B: 0xa7, A: 0xff}, // reddish purple
	{R: 0xe6, G: 0x9f, B: 0x00, A: 0xff}, // orange
	{R: 0x56, G: 0xb4, B: 0xe9, A: 0xff}, // sky blue
	{R: 0x00, G: 0x00, B: 0x00, A: 0xff}, // black
}

// group is one cluster of bars: a figure pair (p50, p99) per report.
type group struct {
	label    string
	p50, p99 []float64 // per report; 0 where it has none
}

// charts are the comparison's plots: the call's RTT per run (or each
// flow's, without a call) and each queue's sojourn, p50 and p99 as one
// bar per report, p50 its solid part.
func (c *Comparison) charts() []*chart {
	var cs []*chart
	if gs := c.rttGroups(); len(gs) > 0 {
		cs = append(cs, c.barChart("compare_rtt", "Round-trip time per run, p50 (solid) and p99 (whole bar)", "RTT (ms)", gs))
	}
	if gs := c.sojournGroups(); len(gs) > 0 {
		cs = append(cs, c.barChart("compare_sojourn", "Queue sojourn per run and queue, p50 (solid) and p99 (whole bar)", "sojourn (ms)", gs))
	}
	return cs
}

func (c *Comparison) rttGroups() []group {
	call := false
	for _, r := range c.Reports {
		for _, run := range r.Runs {
			call = call || run.Call != nil
		}
	}
	var gs []group
	for _, name := range c.runNames() {
		if call {
			gs = c.addGroup(gs, name, name, func(run *Run) (float64, float64, bool) {
				if run.Call == nil || run.Call.RTTMs.N == 0 {
					return 0, 0, false
				}
				return run.Call.RTTMs.P50, run.Call.RTTMs.P99, true
			})
			continue
		}
		for _, m := range flowMetrics(c.Reports...) {
			label, ok := strings.CutSuffix(strings.TrimPrefix(m.Key, "flow_"), "_goodput_mbit")
			if !ok {
				continue
			}
			gs = c.addGroup(gs, name+"\n"+label, name, func(run *Run) (float64, float64, bool) {
				for _, f := range run.Flows {
					if f.Label == label && f.RTTMs != nil && f.RTTMs.N > 0 {
						return f.RTTMs.P50, f.RTTMs.P99, true
					}
				}
				return 0, 0, false
			})
		}
	}
	return gs
}

func (c *Comparison) sojournGroups() []group {
	var gs []group
	for _, name := range c.runNames() {
		for _, q := range []string{"L", "C"} {
			gs = c.addGroup(gs, name+"\n"+q+" queue", name, func(run *Run) (float64, float64, bool) {
				if qq := run.queue(q); qq != nil && qq.SojournMs.N > 0 {
					return qq.SojournMs.P50, qq.SojournMs.P99, true
				}
				return 0, 0, false
			})
		}
	}
	return gs
}

// addGroup appends the group label of run name's figures by f, when a
// report has them.
func (c *Comparison) addGroup(gs []group, label, name string, f func(*Run) (p50, p99 float64, ok bool)) []group {
	g := group{label: label, p50: make([]float64, len(c.Reports)), p99: make([]float64, len(c.Reports))}
	any := false
	for i := range c.Reports {
		if run := c.run(i, name); run != nil {
			if p50, p99, ok := f(run); ok {
				g.p50[i], g.p99[i], any = p50, max(p50, p99), true
			}
		}
	}
	if !any {
		return gs
	}
	return append(gs, g)
}

// barChart draws groups of bars, one bar per report in each.
func (c *Comparison) barChart(name, title, y string, gs []group) *chart {
	ch := &chart{name: name, p: plotfile.New(title, "", y)}
	n := len(c.Reports)
	// The groups share the data area's width; the bars fill 60 % of it.
	width := plotW * 0.6 / vg.Length(len(gs)*n)
	labels := make([]string, len(gs))
	for k, g := range gs {
		labels[k] = g.label
	}
	for i := range c.Reports {
		p50, p99 := make(plotter.Values, len(gs)), make(plotter.Values, len(gs))
		for k, g := range gs {
			p50[k], p99[k] = g.p50[i], g.p99[i]-g.p50[i]
		}
		col := reportColours[i%len(reportColours)]
		lo, err := plotter.NewBarChart(p50, width)
		if err != nil {
			continue
		}
		hi, err := plotter.NewBarChart(p99, width)
		if err != nil {
			continue
		}
		off := (vg.Length(i) - vg.Length(n-1)/2) * width
		lo.Color, lo.Offset, lo.LineStyle.Width = col, off, 0
		light := color.NRGBA{R: col.R, G: col.G, B: col.B, A: 0x60}
		hi.Color, hi.Offset, hi.LineStyle.Width = light, off, 0
		hi.StackOn(lo)
		ch.p.Add(lo, hi)
		ch.p.Legend.Add(c.Names[i]+" p50", lo)
		ch.p.Legend.Add(c.Names[i]+" p99", hi)
		ch.series = append(ch.series, drawn{Label: c.Names[i], Class: plotfile.Other, Style: i})
	}
	ch.p.NominalX(labels...)
	ch.p.Y.Min = 0
	ch.p.Y.Max = roundUp(ch.p.Y.Max * 1.05) // the tallest bar's top stays in the frame
	return ch
}

// roundUp is the least multiple of half a power of ten at or above x > 0,
// an axis end the default ticks label.
func roundUp(x float64) float64 {
	if x <= 0 {
		return 1
	}
	step := math.Pow(10, math.Floor(math.Log10(x))) / 2
	return math.Ceil(x/step) * step
}
