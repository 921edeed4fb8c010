package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"image/color"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/pi2hop/pi2hop/internal/plotfile"
	"github.com/pi2hop/pi2hop/invoker"
)

// CompareFile is the comparison's tables, written beside its plots.
const CompareFile = "compare.md"

// Comparison sets lab reports side by side (pi2hop lab compare): their
// runs matched by name, each figure of Metrics and of the flows beside
// the same figure of the other reports, and which is better.
type Comparison struct {
	Names   []string // a column per report: its folder's name
	Reports []*Report
}

// ReadComparison reads the report folders dirs (report.json each).
func ReadComparison(dirs []string) (*Comparison, error) {
	c := &Comparison{}
	seen := map[string]int{}
	for _, d := range dirs {
		r, err := Read(d)
		if err != nil {
			return nil, err
		}
		name := filepath.Base(filepath.Clean(d))
		if seen[name]++; seen[name] > 1 {
			name = fmt.Sprintf("%s (%d)", name, seen[name])
		}
		c.Names, c.Reports = append(c.Names, name), append(c.Reports, r)
	}
	return c, nil
}

// runNames are the run names of every report, in the order they first
// appear.
func (c *Comparison) runNames() []string {
	var names []string
	for _, r := range c.Reports {
		for _, run := range r.Runs {
			if !slices.Contains(names, run.Name) {
				names = append(names, run.Name)
			}
		}
	}
	return names
}

// run is report i's run called name, or nil.
func (c *Comparison) run(i int, name string) *Run {
	for j := range c.Reports[i].Runs {
		if c.Reports[i].Runs[j].Name == name {
			return &c.Reports[i].Runs[j]
		}
	}
	return nil
}

// Tables are what lab compare prints: the reports, then a table per run
// with a column per report.
func (c *Comparison) Tables() []Table {
	ts := []Table{c.reportTable()}
	ms := allMetrics(c.Reports...)
	for _, name := range c.runNames() {
		ts = append(ts, c.runTable(name, ms))
	}
	return ts
}

func (c *Comparison) reportTable() Table {
	t := Table{Title: "Reports", Header: []string{"report", "scenario", "started", "durations", "pi2hop", "runs"}}
	scenarios := map[string]bool{}
	for i, r := range c.Reports {
		dur := "full"
		if r.Quick {
			dur = "--quick"
		}
		t.Rows = append(t.Rows, []string{c.Names[i], r.Scenario, r.Started.UTC().Format(time.RFC3339), dur,
			r.Versions.Pi2hop, fmt.Sprint(len(r.Runs))})
		scenarios[r.Scenario] = true
	}
	if len(scenarios) > 1 {
		t.Notes = append(t.Notes, "The reports ran different scenarios: runs are matched by name only.")
	}
	if d := c.configDiffs(); len(d) > 0 {
		t.Notes = append(t.Notes, "Configuration that differs: "+strings.Join(d, "; "))
	}
	return t
}

// configDiffs names each configuration key whose value differs between
// the reports, with the values in report order.
func (c *Comparison) configDiffs() []string {
	flat := make([]map[string]string, len(c.Reports))
	var keys []string
	for i, r := range c.Reports {
		flat[i] = map[string]string{}
		flatten("", generic(r.Config), flat[i])
		for k := range flat[i] {
			if !slices.Contains(keys, k) {
				keys = append(keys, k)
			}
		}
	}
	slices.Sort(keys)
	var out []string
	for _, k := range keys {
		vals := make([]string, len(flat))
		differ := false
		for i, f := range flat {
			vals[i] = f[k]
			if vals[i] == "" {
				vals[i] = "–"
			}
			differ = differ || vals[i] != vals[0]
		}
		if differ {
			out = append(out, k+" "+strings.Join(vals, " vs "))
		}
	}
	return out
}

// generic is v as JSON values: a report read back has them already, one
// built in memory has the testbed's structs.
func generic(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	var g any
	if json.Unmarshal(b, &g) != nil {
		return nil
	}
	return g
}

// flatten puts every leaf of v into out by its dotted path.
func flatten(path string, v any, out map[string]string) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			p := k
			if path != "" {
				p = path + "." + k
			}
			flatten(p, e, out)
		}
	case nil:
	default:
		b, _ := json.Marshal(x)
		out[path] = string(b)
	}
}

// runTable sets run name's figures of every report side by side; the
// last column names the report whose figure is better, and with two
// reports a column gives the second's change from the first.
func (c *Comparison) runTable(name string, ms []Metric) Table {
	runs := make([]*Run, len(c.Reports))
	title := name
	for i := range c.Reports {
		if runs[i] = c.run(i, name); runs[i] != nil {
			title = fmt.Sprintf("%s (%s)", runs[i].Title, name)
		}
	}
	t := Table{Title: "Run " + title, Header: append(append([]string{"figure"}, c.Names...), "better")}
	two := len(c.Reports) == 2
	if two {
		t.Header = slices.Insert(t.Header, 3, "change")
	}
	for _, m := range ms {
		vals := make([]float64, len(runs))
		has := make([]bool, len(runs))
		row, any := []string{m.Name}, false
		for i, run := range runs {
			cell := "–"
			if run != nil {
				if vals[i], has[i] = m.Value(c.Reports[i], run); has[i] {
					cell, any = m.format(vals[i]), true
				}
			}
			row = append(row, cell)
		}
		if !any {
			continue
		}
		if two {
			row = append(row, change(vals, has))
		}
		t.Rows = append(t.Rows, append(row, c.better(m, vals, has)))
	}
	for i, run := range runs {
		switch {
		case run == nil:
			t.Notes = append(t.Notes, c.Names[i]+" has no run "+name+".")
		case run.Repeats > 1:
			t.Notes = append(t.Notes, fmt.Sprintf("%s: figures are the medians of %d repetitions.", c.Names[i], run.Repeats))
		}
		if run != nil && run.Error != "" {
			t.Notes = append(t.Notes, fmt.Sprintf("%s: the run failed: %s", c.Names[i], run.Error))
		}
	}
	return t
}

// format prints a figure as the report's tables do: shares in per cent.
func (m Metric) format(v float64) string {
	k := m.Key
	if strings.HasSuffix(k, "loss") || strings.HasSuffix(k, "loss_worst_1s") || strings.HasSuffix(k, "stall_rate") ||
		strings.Contains(k, "fps_share") || k == "utilisation" {
		return pct(v)
	}
	return num(v)
}

// change is the second figure's relative change from the first.
func change(vals []float64, has []bool) string {
	switch {
	case !has[0] || !has[1]:
		return ""
	case vals[0] == vals[1]:
		return "0 %"
	case vals[0] == 0:
		return "–"
	}
	return fmt.Sprintf("%+.0f %%", 100*(vals[1]-vals[0])/math.Abs(vals[0]))
}

// better names the report with the better figure, "same" when all are
// equal, "" where m has no better side or fewer than two have it.
func (c *Comparison) better(m Metric, vals []float64, has []bool) string {
	if m.Better == Neither {
		return ""
	}
	best, n := math.NaN(), 0
	for i, v := range vals {
		if !has[i] {
			continue
		}
		n++
		if math.IsNaN(best) || m.Better == Lower && v < best || m.Better == Higher && v > best {
			best = v
		}
	}
	if n < 2 {
		return ""
	}
	var who []string
	for i, v := range vals {
		if has[i] && v == best {
			who = append(who, c.Names[i])
		}
	}
	if len(who) == n {
		return "same"
	}
	return strings.Join(who, ", ")
}

// Markdown writes the comparison's tables and its plots.
func (c *Comparison) Markdown(plots []string) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# pi2hop lab compare: %s\n\n", strings.Join(c.Names, " vs "))
	for _, t := range c.Tables() {
		_ = t.Markdown(&b)
	}
	if len(plots) > 0 {
		b.WriteString("## Plots\n\n")
		writePlotLinks(&b, plots)
	}
	return b.Bytes()
}

// Write creates the folder dir (it must not exist) for owner with the
// comparison's plots, in each of formats, and CompareFile; it returns the
// plot files written.
func (c *Comparison) Write(dir string, formats plotfile.Formats, owner invoker.User) ([]string, error) {
	if err := owner.Mkdir(dir, invoker.ModeDir); err != nil {
		return nil, fmt.Errorf("compare folder: %w", err)
	}
	var plots []string
	for _, ch := range c.charts() {
		files, err := plotfile.Save(ch.p, plotW, plotH, filepath.Join(dir, ch.name), formats, owner)
		for _, f := range files {
			plots = append(plots, filepath.Base(f))
		}
		if err != nil {
			return plots, err
		}
	}
	return plots, owner.WriteFile(filepath.Join(dir, CompareFile), c.Markdown(plots), invoker.ModeReport)
}

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
