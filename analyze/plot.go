package analyze

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/pi2hop/pi2hop/internal/plotfile"
	"github.com/pi2hop/pi2hop/invoker"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// Series colours are the classes' (plotfile's palette, as in a lab
// report): the L queue L4S, the Classic queue Classic; solid for the main
// figure, dashed for the secondary one.
var (
	colourL = plotfile.L4S
	colourC = plotfile.Classic
)

// WritePlots draws two or three plots per direction into dir (made for
// owner if it does not exist), each in every one of formats (nil:
// plotfile.DefaultFormats): <direction>-marking (mark and drop fraction
// per bin, per queue), <direction>-sojourn (sojourn p50 and p99 per bin,
// per queue) and, when the capture carries sojourns, <direction>-sojourn-ccdf
// (each queue's sojourn CCDF on a log axis), each a new file of owner's;
// and rtt-ccdf, the flows' round trips per flow class, when the capture
// has samples (drawRTTCCDF). A direction's name becomes
// one path element of the file name, whatever it holds. It returns the
// files written.
func (r *Result) WritePlots(dir string, formats plotfile.Formats, owner invoker.User) ([]string, error) {
	if err := owner.Mkdir(dir, invoker.ModeDir); err != nil && !errors.Is(err, invoker.ErrExists) {
		return nil, fmt.Errorf("plot directory: %w", err)
	}
	var files []string
	for _, d := range r.Directions {
		base := fileSafe(d.Name)
		marking := []series{
			{"L marked", colourL, false, func(b *BinResult) (float64, bool) { return b.Classes[1].MarkFraction, b.Classes[1].Sent > 0 }},
			{"C marked", colourC, false, func(b *BinResult) (float64, bool) { return b.Classes[0].MarkFraction, b.Classes[0].Sent > 0 }},
			{"L dropped", colourL, true, func(b *BinResult) (float64, bool) {
				return b.Classes[1].DropFraction, b.Classes[1].Sent+b.Classes[1].Dropped > 0
			}},
			{"C dropped", colourC, true, func(b *BinResult) (float64, bool) {
				return b.Classes[0].DropFraction, b.Classes[0].Sent+b.Classes[0].Dropped > 0
			}},
		}
		sojourn := []series{
			{"L p50", colourL, false, func(b *BinResult) (float64, bool) { return b.Classes[1].SojournP50, b.Classes[1].SojournP99 > 0 }},
			{"L p99", colourL, true, func(b *BinResult) (float64, bool) { return b.Classes[1].SojournP99, b.Classes[1].SojournP99 > 0 }},
			{"C p50", colourC, false, func(b *BinResult) (float64, bool) { return b.Classes[0].SojournP50, b.Classes[0].SojournP99 > 0 }},
			{"C p99", colourC, true, func(b *BinResult) (float64, bool) { return b.Classes[0].SojournP99, b.Classes[0].SojournP99 > 0 }},
		}
		for _, pl := range []struct {
			file, title, y string
			s              []series
		}{
			{filepath.Join(dir, base+"-marking"), d.Name + ": congestion signals per " + binLabel(r.BinMs), "fraction of packets", marking},
			{filepath.Join(dir, base+"-sojourn"), d.Name + ": queue sojourn per " + binLabel(r.BinMs), "sojourn (ms)", sojourn},
		} {
			written, err := drawSeries(pl.file, formats, owner, pl.title, pl.y, d.Bins, r.BinMs, pl.s)
			files = append(files, written...)
			if err != nil {
				return files, err
			}
		}
		written, err := drawSojournCCDF(filepath.Join(dir, base+"-sojourn-ccdf"), formats, owner, d)
		files = append(files, written...)
		if err != nil {
			return files, err
		}
	}
	written, err := drawRTTCCDF(filepath.Join(dir, "rtt-ccdf"), formats, owner, r.RTT)
	return append(files, written...), err
}

// drawRTTCCDF draws the round trip's CCDF through the hop per flow class
// (the queue the flow's packets went to: L, C, or both), the halves'
// samples of the class's flows merged (rttCurve); nothing without
// samples.
func drawRTTCCDF(base string, formats plotfile.Formats, owner invoker.User, r *RTTResult) ([]string, error) {
	if r == nil {
		return nil, nil
	}
	p := plotfile.New("round trip through the hop per flow class, CCDF", "round trip, client half + server half (ms)", "fraction of samples ≥ x")
	smallest, lines := 1.0, 0
	for i, class := range []string{"L", "C", "C+L"} {
		var flows []*RTTFlow
		for j := range r.Flows {
			if r.Flows[j].Class == class {
				flows = append(flows, &r.Flows[j])
			}
		}
		d := rttCurve(flows)
		pts := plotfile.DistPoints(d, true)
		if len(pts) == 0 {
			continue
		}
		line, err := plotter.NewLine(pts)
		if err != nil {
			return nil, fmt.Errorf("plot %s: %w", base, err)
		}
		colour, style := plotfile.L4S, 0
		switch i {
		case 1:
			colour = plotfile.Classic
		case 2:
			style = 1
		}
		plotfile.Style(&line.LineStyle, colour, style)
		p.Add(line)
		p.Legend.Add(class+" flows", line)
		smallest = min(smallest, 1/float64(d.N))
		lines++
	}
	if lines == 0 {
		return nil, nil
	}
	plotfile.DistAxis(p, true, smallest)
	return plotfile.Save(p, 20*vg.Centimeter, 10*vg.Centimeter, base, formats, owner)
}

// drawSojournCCDF draws each queue's sojourn CCDF, the share of packets
// that waited at least x, down to one packet; nothing without sojourns.
func drawSojournCCDF(base string, formats plotfile.Formats, owner invoker.User, d *DirectionResult) ([]string, error) {
	p := plotfile.New(d.Name+": queue sojourn, CCDF (tail on a log axis)", "sojourn (ms)", "fraction of packets ≥ x")
	smallest, lines := 1.0, 0
	for _, c := range d.Classes {
		sd := c.sojournDist
		pts := plotfile.DistPoints(sd, true)
		if len(pts) == 0 {
			continue
		}
		line, err := plotter.NewLine(pts)
		if err != nil {
			return nil, fmt.Errorf("plot %s: %w", base, err)
		}
		class, name := plotfile.Classic, "C queue"
		if c.Class == "L" {
			class, name = plotfile.L4S, "L queue"
		}
		plotfile.Style(&line.LineStyle, class, 0)
		p.Add(line)
		p.Legend.Add(name, line)
		smallest = min(smallest, 1/float64(sd.N))
		lines++
	}
	if lines == 0 {
		return nil, nil
	}
	plotfile.DistAxis(p, true, smallest)
	return plotfile.Save(p, 20*vg.Centimeter, 10*vg.Centimeter, base, formats, owner)
}

// series is one line: the value of a bin, and whether the bin has one.
type series struct {
	name   string
	class  plotfile.Class
	dashed bool
	value  func(*BinResult) (float64, bool)
}

func drawSeries(base string, formats plotfile.Formats, owner invoker.User, title, ylabel string, bins []BinResult, binMs float64, ss []series) ([]string, error) {
	p := plotfile.New(title, "time since the capture's first packet (s)", ylabel)
	p.Y.Min = 0
	p.X.Min = 0
	for _, s := range ss {
		var xy plotter.XYs
		for i := range bins {
			if v, ok := s.value(&bins[i]); ok {
				// Plot at the middle of the bin.
				xy = append(xy, plotter.XY{X: bins[i].Start + binMs/2000, Y: v})
			}
		}
		if len(xy) == 0 {
			continue
		}
		line, err := plotter.NewLine(xy)
		if err != nil {
			return nil, fmt.Errorf("plot %s: %w", base, err)
		}
		style := 0
		if s.dashed {
			style = 1
		}
		plotfile.Style(&line.LineStyle, s.class, style)
		p.Add(line)
		p.Legend.Add(s.name, line)
	}
	return plotfile.Save(p, 20*vg.Centimeter, 10*vg.Centimeter, base, formats, owner)
}

func binLabel(binMs float64) string {
	if binMs >= 1000 {
		return fmt.Sprintf("%gs", binMs/1000)
	}
	return fmt.Sprintf("%gms", binMs)
}

// fileSafe keeps letters, digits, '-', '_' and '.'.
func fileSafe(s string) string {
	if s == "" || s[0] == '.' {
		s = "_" + s // never ".", "..", or hidden
	}
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			return r
		}
		return '_'
	}, s)
}
