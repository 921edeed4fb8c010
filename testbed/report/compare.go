package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"time"

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
