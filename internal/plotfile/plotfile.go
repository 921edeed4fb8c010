// Package plotfile writes gonum plots as PNG and SVG files that belong to
// the invoking user (see invoker): new files only, never through a
// symlink. It also holds the one palette every plot of pi2hop draws with
// (palette.go), so a class has the same colour in a lab report and in
// analyze's plots.
package plotfile

import (
	"fmt"
	"io"
	"strings"

	"github.com/pi2hop/pi2hop/invoker"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Formats are the file formats a plot is written in, in the order given.
type Formats []string

// DefaultFormats: PNG for a Markdown viewer or a quick look, SVG for a
// paper or a slide, where it scales without blur.
var DefaultFormats = Formats{"png", "svg"}

// Known are the formats that can be asked for.
var Known = []string{"png", "svg"}

// ParseFormats reads a comma-separated list of formats ("svg,png"),
// each at most once.
func ParseFormats(s string) (Formats, error) {
	var fs Formats
	for _, f := range strings.Split(s, ",") {
		f = strings.ToLower(strings.TrimSpace(f))
		switch {
		case f == "":
			return nil, fmt.Errorf("%q: want png, svg or both, comma-separated (png,svg)", s)
		case f != "png" && f != "svg":
			return nil, fmt.Errorf("%q: unknown format %q (want png, svg or png,svg)", s, f)
		case fs.Has(f):
			return nil, fmt.Errorf("%q: %s given twice", s, f)
		}
		fs = append(fs, f)
	}
	return fs, nil
}

// Has says whether f is one of fs.
func (fs Formats) Has(f string) bool {
	for _, x := range fs {
		if x == f {
			return true
		}
	}
	return false
}

// String lists fs as ParseFormats reads them.
func (fs Formats) String() string { return strings.Join(fs, ",") }

// Set makes Formats a command-line flag value.
func (fs *Formats) Set(s string) error {
	v, err := ParseFormats(s)
	if err != nil {
		return err
	}
	*fs = v
	return nil
}

// Type names the flag's value in pflag's messages.
func (fs *Formats) Type() string { return "formats" }

// legendGap separates the data area from a legend drawn beside it.
const legendGap = 3 * vg.Millimeter

// Save draws p into base + "." + format for each of formats, each a new
// file of owner's, and returns the file names written. The plot's data
// area is w × h; a legend, if p has one, is drawn to the right of it, in
// a strip of its own, so it never covers a curve.
func Save(p *plot.Plot, w, h vg.Length, base string, formats Formats, owner invoker.User) ([]string, error) {
	if len(formats) == 0 {
		formats = DefaultFormats
	}
	var files []string
	for _, f := range formats {
		file := base + "." + f
		wt, err := render(p, w, h, f)
		if err == nil {
			err = owner.WriteWith(file, invoker.ModeReport, func(out io.Writer) error {
				_, err := wt.WriteTo(out)
				return err
			})
		}
		if err != nil {
			return files, fmt.Errorf("plot %s: %w", file, err)
		}
		files = append(files, file)
	}
	return files, nil
}

// render draws p with its legend outside the axes: the canvas grows by
// the legend's width, and in height if the legend is taller than h.
func render(p *plot.Plot, w, h vg.Length, format string) (io.WriterTo, error) {
	leg := p.Legend
	lw, lh := legendSize(&leg)
	width, height := w, h
	if lw > 0 {
		width += lw + legendGap
		height = max(h, lh+titleHeight(p)+2*legendGap)
	}
	c, err := draw.NewFormattedCanvas(width, height, format)
	if err != nil {
		return nil, err
	}
	dc := draw.New(c)
	if lw == 0 {
		p.Draw(dc)
		return c, nil
	}
	// The plot is drawn without its legend, which goes in the strip on
	// the right, level with the top of the data area.
	p.Legend = plot.NewLegend()
	defer func() { p.Legend = leg }()
	p.Draw(draw.Crop(dc, 0, -(lw + legendGap), 0, 0))
	strip := draw.Crop(dc, width-lw, 0, 0, -titleHeight(p))
	leg.Top, leg.Left, leg.XOffs, leg.YOffs = true, true, 0, 0
	leg.Draw(strip)
	return c, nil
}

// legendSize is the size the legend's entries take, zero without any.
func legendSize(l *plot.Legend) (w, h vg.Length) {
	r := l.Rectangle(draw.Canvas{})
	return r.Max.X - r.Min.X, r.Max.Y - r.Min.Y
}

func titleHeight(p *plot.Plot) vg.Length {
	if p.Title.Text == "" {
		return 0
	}
	return p.Title.TextStyle.Rectangle(p.Title.Text).Size().Y + p.Title.Padding
}
