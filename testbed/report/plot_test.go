package report

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/pi2hop/pi2hop/internal/plotfile"
	"github.com/pi2hop/pi2hop/invoker"
	"gonum.org/v1/plot"
)

// demoReport is l4s-demo's shape: the call on L4S and classic through
// DualPI2, and classic behind a FIFO, whose one queue holds every packet.
func demoReport() *Report {
	r := sampleReport()
	fifo := sampleRun("fifo-classic", "FIFO, call classic", "classic", 60)
	fifo.AQM = "fifo"
	fifo.Queues = fifo.Queues[1:]
	delete(fifo.Series.QueueDelayMs, "L")
	delete(fifo.SojournDist, "L")
	r.Runs = append(r.Runs, fifo)
	return r
}

// legendEntry is what an SVG's legend shows for one series: the label,
// and the stroke colour and dash pattern of the line drawn before it.
type legendEntry struct {
	label, stroke, dashes string
}

// gonum's SVG draws each legend entry as its thumbnail path followed by
// its text.
var legendRE = regexp.MustCompile(`<path d="[^"]*" style="fill:none;stroke:(#[0-9A-Fa-f]{6})[^"]*?(?:stroke-dasharray:([0-9.,]+))?" />\s*<text[^>]*>([^<]*)</text>`)

func svgLegend(t *testing.T, file string) []legendEntry {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var es []legendEntry
	for _, m := range legendRE.FindAllStringSubmatch(string(b), -1) {
		es = append(es, legendEntry{label: m[3], stroke: strings.ToUpper(m[1]), dashes: m[2]})
	}
	return es
}

// TestPlotsClassColours writes a report's plots as SVG and reads back,
// per legend entry, the colour its line is drawn in: every L4S series is
// one blue and every Classic series one vermillion in every plot, and the
// FIFO's one queue neither. The class each label stands for is worked out
// here from what the sample report's runs carry.
func TestPlotsClassColours(t *testing.T) {
	const l4s, classic = "#0072B2", "#D55E00"
	dir := filepath.Join(t.TempDir(), "out")
	r := demoReport()
	if err := r.Write(dir, plotfile.Formats{"svg", "png"}, invoker.User{}); err != nil {
		t.Fatal(err)
	}
	// file → label → class colour, as the model says: the L queue and
	// the call on L4S are L4S, the C queue and cubic Classic.
	want := map[string]map[string]string{
		"rtt_ccdf.svg": {"DualPI2, call on L4S": l4s, "DualPI2, call classic": classic, "FIFO, call classic": classic},
		"rtt_cdf.svg":  {"DualPI2, call on L4S": l4s, "DualPI2, call classic": classic, "FIFO, call classic": classic},
		"sojourn_ccdf.svg": {"DualPI2, call on L4S: L queue": l4s, "DualPI2, call on L4S: C queue": classic,
			"DualPI2, call classic: L queue": l4s, "DualPI2, call classic: C queue": classic, "FIFO, call classic: FIFO queue": "other"},
		"fps.svg":                        {"DualPI2, call on L4S": l4s, "DualPI2, call classic": classic, "FIFO, call classic": classic},
		"queue_delay_dualpi2-l4s.svg":    {"L queue": l4s, "C queue": classic},
		"queue_delay_fifo-classic.svg":   {"C queue": "other"},
		"throughput_dualpi2-l4s.svg":     {"call": l4s, "bulk-1": classic},
		"throughput_dualpi2-classic.svg": {"call": classic, "bulk-1": classic},
		"bdp.svg":                        {"predicted, window 17520 B": classic},
	}
	seen := 0
	for _, p := range r.Plots {
		if filepath.Ext(p) != ".svg" {
			continue
		}
		entries := svgLegend(t, filepath.Join(dir, p))
		if len(entries) == 0 {
			t.Errorf("%s: no legend entries found", p)
		}
		for _, e := range entries {
			if e.stroke != l4s && e.stroke != classic && e.stroke != "#555555" {
				t.Errorf("%s: %q drawn in %s, not a class colour", p, e.label, e.stroke)
			}
			w, ok := want[p][e.label]
			if !ok {
				continue
			}
			seen++
			if w == "other" && (e.stroke == l4s || e.stroke == classic) || w != "other" && e.stroke != w {
				t.Errorf("%s: %q drawn in %s, want %s", p, e.label, e.stroke, w)
			}
		}
	}
	if seen < 20 {
		t.Errorf("checked %d legend entries, want every one of the table's", seen)
	}
}

// TestPlotsLineStyles: line style stands for the AQM, so the classic
// call behind the FIFO and in DualPI2's C queue differ in dash only, and
// two DualPI2 runs' queues of one class differ too.
func TestPlotsLineStyles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	if err := demoReport().Write(dir, plotfile.Formats{"svg"}, invoker.User{}); err != nil {
		t.Fatal(err)
	}
	dash := func(file, label string) string {
		for _, e := range svgLegend(t, filepath.Join(dir, file)) {
			if e.label == label {
				return e.dashes
			}
		}
		t.Fatalf("%s: no legend entry %q", file, label)
		return ""
	}
	if a, b := dash("rtt_ccdf.svg", "DualPI2, call classic"), dash("rtt_ccdf.svg", "FIFO, call classic"); a != "" || b == "" {
		t.Errorf("RTT CCDF: DualPI2 dashes %q (want solid), FIFO %q (want dashed)", a, b)
	}
	if a, b := dash("sojourn_ccdf.svg", "DualPI2, call on L4S: L queue"), dash("sojourn_ccdf.svg", "DualPI2, call classic: L queue"); a == b {
		t.Errorf("sojourn CCDF: two DualPI2 runs' L queues both drawn %q", a)
	}
}

// TestCCDFLogAxis: the CCDFs have a log y axis that reaches 1/N, and the
// SVG and PNG copies of each are written.
func TestCCDFLogAxis(t *testing.T) {
	r := demoReport()
	var found int
	for _, c := range r.charts() {
		if !strings.HasSuffix(c.name, "_ccdf") {
			continue
		}
		found++
		if _, ok := c.p.Y.Scale.(plot.LogScale); !ok {
			t.Errorf("%s: y axis %T, want a log scale", c.name, c.p.Y.Scale)
		}
		// 500 RTT samples, 900 C-queue packets: the tail ends at 1/N.
		if want := map[string]float64{"rtt_ccdf": 1.0 / 500, "sojourn_ccdf": 1.0 / 900}[c.name]; c.p.Y.Min > want {
			t.Errorf("%s: y axis starts at %g, above 1/N = %g", c.name, c.p.Y.Min, want)
		}
	}
	if found != 2 {
		t.Errorf("%d CCDF plots, want RTT and sojourn", found)
	}
	dir := filepath.Join(t.TempDir(), "out")
	if err := r.Write(dir, nil, invoker.User{}); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"rtt_ccdf.png", "rtt_ccdf.svg", "sojourn_ccdf.png", "sojourn_ccdf.svg", "rtt_cdf.svg"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		if png := bytes.HasPrefix(b, []byte("\x89PNG")); png != (filepath.Ext(f) == ".png") {
			t.Errorf("%s: PNG %v", f, png)
		}
	}
	md, _ := os.ReadFile(filepath.Join(dir, MarkdownFile))
	if !bytes.Contains(md, []byte("![rtt_ccdf](rtt_ccdf.png) ([SVG](rtt_ccdf.svg))")) {
		t.Errorf("report.md does not show the CCDF with its SVG copy:\n%s", md)
	}
}

// TestTimePlotsAxis: every time plot counts seconds from the run's start
// and spans its traffic time, so the warm-up (shaded) is in view.
func TestTimePlotsAxis(t *testing.T) {
	for _, c := range demoReport().charts() {
		if !strings.HasPrefix(c.name, "fps") && !strings.HasPrefix(c.name, "queue_delay_") && !strings.HasPrefix(c.name, "throughput_") {
			continue
		}
		if c.p.X.Min != 0 || c.p.X.Max != 20 || c.p.X.Label.Text != timeLabel {
			t.Errorf("%s: x axis %g..%g %q, want 0..20 s %q", c.name, c.p.X.Min, c.p.X.Max, c.p.X.Label.Text, timeLabel)
		}
	}
}
