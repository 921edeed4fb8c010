// Package plotfile writes gonum plots as PNG files that belong to the
// invoking user (see invoker): new files only, never through a symlink.
package plotfile

import (
	"fmt"
	"io"

	"github.com/pi2hop/pi2hop/invoker"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
)

// SavePNG draws p at w × h into a new file of owner's at path.
func SavePNG(p *plot.Plot, w, h vg.Length, path string, owner invoker.User) error {
	wt, err := p.WriterTo(w, h, "png")
	if err == nil {
		err = owner.WriteWith(path, invoker.ModeReport, func(f io.Writer) error {
			_, err := wt.WriteTo(f)
			return err
		})
	}
	if err != nil {
		return fmt.Errorf("plot %s: %w", path, err)
	}
	return nil
}
