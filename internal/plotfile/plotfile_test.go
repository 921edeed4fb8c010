package plotfile

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/pi2hop/pi2hop/invoker"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

func TestParseFormats(t *testing.T) {
	for _, tt := range []struct {
		in      string
		want    Formats
		errPart string
	}{
		{"png", Formats{"png"}, ""},
		{"svg,png", Formats{"svg", "png"}, ""},
		{" SVG , png ", Formats{"svg", "png"}, ""},
		{"jpg", nil, `unknown format "jpg" (want png, svg or png,svg)`},
		{"png,", nil, "want png, svg or both"},
		{"", nil, "want png, svg or both"},
		{"png,png", nil, "png given twice"},
	} {
		got, err := ParseFormats(tt.in)
		switch {
		case tt.errPart != "" && (err == nil || !strings.Contains(err.Error(), tt.errPart)):
			t.Errorf("ParseFormats(%q) error %v, want one containing %q", tt.in, err, tt.errPart)
		case tt.errPart == "" && (err != nil || !slices.Equal(got, tt.want)):
			t.Errorf("ParseFormats(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
}

// TestLegendBesideData: Save draws the legend in a strip right of the
// data area, so every legend thumbnail starts right of the rightmost
// grid line (the data area's edge), and the files are the formats asked.
func TestLegendBesideData(t *testing.T) {
	p := New("t", "x", "y")
	for i, class := range []Class{L4S, Classic, Other} {
		l, err := plotter.NewLine(plotter.XYs{{X: 0, Y: float64(i)}, {X: 10, Y: float64(i + 1)}})
		if err != nil {
			t.Fatal(err)
		}
		Style(&l.LineStyle, class, i)
		p.Add(l)
		p.Legend.Add("a rather long legend label "+class.String(), l)
	}
	base := filepath.Join(t.TempDir(), "p")
	files, err := Save(p, 10*vg.Centimeter, 6*vg.Centimeter, base, Formats{"svg", "png"}, invoker.User{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(files, []string{base + ".svg", base + ".png"}) {
		t.Errorf("files %v", files)
	}
	b, err := os.ReadFile(base + ".svg")
	if err != nil {
		t.Fatal(err)
	}
	svg := string(b)
	num := func(s string) float64 { f, _ := strconv.ParseFloat(s, 64); return f }
	// Grid lines are grey horizontal and vertical paths; the rightmost x
	// any of them reaches is the data area's right edge.
	edge := 0.0
	for _, m := range regexp.MustCompile(`<path d="M([0-9.]+),[0-9.]+L([0-9.]+),[0-9.]+" style="fill:none;stroke:#808080`).FindAllStringSubmatch(svg, -1) {
		edge = max(edge, num(m[1]), num(m[2]))
	}
	thumbs := regexp.MustCompile(`<path d="M([0-9.]+),[0-9.]+L[0-9.]+,[0-9.]+" style="fill:none;stroke:#(?:0072B2|D55E00|555555)[^"]*" />\s*<text`).FindAllStringSubmatch(svg, -1)
	if edge == 0 || len(thumbs) != 3 {
		t.Fatalf("found a data edge at %g and %d legend thumbnails, want an edge and 3", edge, len(thumbs))
	}
	for _, m := range thumbs {
		if x := num(m[1]); x <= edge {
			t.Errorf("a legend thumbnail starts at x %g, inside the data area (right edge %g)", x, edge)
		}
	}
	// The plot itself keeps its legend for the next draw.
	if w, _ := legendSize(&p.Legend); w == 0 {
		t.Error("Save left the plot without its legend")
	}
}
