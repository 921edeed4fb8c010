package plotfile

import (
	"image/color"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Class is what a series' colour stands for: the traffic class of its
// packets, the same in every plot pi2hop draws. Line style (dash pattern)
// stands for the bottleneck (AQM) or the run variant instead.
type Class int

const (
	// L4S: ECT(1) and CE traffic, the L queue.
	L4S Class = iota
	// Classic: Not-ECT and ECT(0) traffic, the C queue.
	Classic
	// Other: a series of no one class, such as a FIFO's single queue
	// that holds every packet.
	Other
)

// Colours of the classes, from Okabe and Ito's colour-blind-safe set:
// blue and vermillion differ in hue and in lightness, so they stay apart
// in greyscale too.
var (
	ColourL4S     = color.RGBA{R: 0x00, G: 0x72, B: 0xb2, A: 0xff}
	ColourClassic = color.RGBA{R: 0xd5, G: 0x5e, B: 0x00, A: 0xff}
	ColourOther   = color.RGBA{R: 0x55, G: 0x55, B: 0x55, A: 0xff}
	// ColourWarmup shades the warm-up, the part of a run left out of
	// every figure: translucent, so the grid shows through.
	ColourWarmup = color.NRGBA{R: 0x80, G: 0x80, B: 0x80, A: 0x30}
)

// Colour is c's colour.
func (c Class) Colour() color.Color {
	switch c {
	case L4S:
		return ColourL4S
	case Classic:
		return ColourClassic
	}
	return ColourOther
}

// String names the class as a legend does.
func (c Class) String() string {
	switch c {
	case L4S:
		return "L4S"
	case Classic:
		return "Classic"
	}
	return "other"
}

// ClassOfECN is the class of a flow that sends with the lab's ECN setting
// ("l4s" for ECT(1), anything else is Classic).
func ClassOfECN(ecn string) Class {
	if ecn == "l4s" {
		return L4S
	}
	return Classic
}

// dashes are the line styles in the order styles are handed out: solid
// first, then patterns that stay apart at a line width of 1.2 pt.
var dashes = [][]vg.Length{
	nil,
	{vg.Points(6), vg.Points(3)},
	{vg.Points(1.5), vg.Points(2)},
	{vg.Points(8), vg.Points(2), vg.Points(1.5), vg.Points(2)},
	{vg.Points(3), vg.Points(3)},
	{vg.Points(12), vg.Points(3)},
	{vg.Points(6), vg.Points(2), vg.Points(1.5), vg.Points(2), vg.Points(1.5), vg.Points(2)},
	{vg.Points(1.5), vg.Points(5)},
	{vg.Points(10), vg.Points(2), vg.Points(3), vg.Points(2)},
	{vg.Points(4), vg.Points(1.5), vg.Points(1.5), vg.Points(1.5), vg.Points(1.5), vg.Points(1.5)},
	{vg.Points(2), vg.Points(4), vg.Points(8), vg.Points(4)},
	{vg.Points(16), vg.Points(4), vg.Points(4), vg.Points(4)},
}

// Dashes is the i-th line style (0 solid); they repeat after twelve.
func Dashes(i int) []vg.Length {
	return dashes[((i%len(dashes))+len(dashes))%len(dashes)]
}

// aqmStyle fixes a style per queue discipline, so an AQM has the same
// line style in every report: DualPI2 solid, a FIFO long-dashed.
var aqmStyle = map[string]int{"dualpi2": 0, "fifo": 1, "fq_codel": 2, "codel": 3, "pie": 4, "docsis": 5}

// VariantStyles is the first style of no AQM's: runs of one AQM that a
// plot must tell apart get it and the ones after it.
const VariantStyles = 6

// AQMStyle is the style index of the queue discipline kind (aqm.Kind*);
// an unknown kind gets the first variant style.
func AQMStyle(kind string) int {
	if i, ok := aqmStyle[kind]; ok {
		return i
	}
	return VariantStyles
}

// LineWidth of every series.
var LineWidth = vg.Points(1.2)

// Style sets l's colour for class and its dash pattern for style.
func Style(l *draw.LineStyle, class Class, style int) {
	l.Color = class.Colour()
	l.Dashes = Dashes(style)
	l.Width = LineWidth
}

// New returns a plot with pi2hop's look: title, axis labels, a grid and
// a legend font small enough for a dozen entries beside the axes.
func New(title, x, y string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = x
	p.Y.Label.Text = y
	p.Add(plotter.NewGrid())
	p.Legend.TextStyle.Font.Size = 9
	p.Legend.Padding = vg.Points(1)
	p.Legend.ThumbnailWidth = vg.Points(28) // a full dash period shows
	return p
}

// Shade is a plotter that fills the band [From, To] of the x axis over
// the data area's full height: the warm-up of a time plot. Add it before
// the lines, so it lies under them.
type Shade struct {
	From, To float64
	Color    color.Color
}

// Plot implements plot.Plotter.
func (s Shade) Plot(c draw.Canvas, p *plot.Plot) {
	trX, _ := p.Transforms(&c)
	x0 := max(trX(s.From), c.Min.X)
	x1 := min(trX(s.To), c.Max.X)
	if x1 <= x0 {
		return
	}
	c.SetColor(s.Color)
	c.Fill(vg.Rectangle{Min: vg.Point{X: x0, Y: c.Min.Y}, Max: vg.Point{X: x1, Y: c.Max.Y}}.Path())
}

// DataRange implements plot.DataRanger, so the band is inside the x axis.
func (s Shade) DataRange() (xmin, xmax, ymin, ymax float64) {
	return s.From, s.To, 0, 0
}

// Thumbnail implements plot.Thumbnailer for the legend entry.
func (s Shade) Thumbnail(c *draw.Canvas) {
	c.SetColor(s.Color)
	c.Fill(c.Rectangle.Path())
}

// ShadeWarmup adds the warm-up band [0, warmup) s to a time plot, with a
// legend entry saying it is left out of the figures.
func ShadeWarmup(p *plot.Plot, warmupS float64) {
	if warmupS <= 0 {
		return
	}
	s := Shade{From: 0, To: warmupS, Color: ColourWarmup}
	p.Add(s)
	p.Legend.Add("warm-up (not in the figures)", s)
}
