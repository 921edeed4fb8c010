package instance

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/pi2hop/pi2hop/hop"
)

// The log says it once when the warning starts to hold in a direction,
// and once when it stops.
func TestBottleneckLog(t *testing.T) {
	var buf bytes.Buffer
	b := &bottleneckLog{log: slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		}}))}
	snap := func(up bool, bps float64) *hop.Snapshot {
		s := &hop.Snapshot{Up: hop.DirStats{Dir: hop.Up, NotBottleneck: up, PathBps: bps}, Down: hop.DirStats{Dir: hop.Down}}
		return s
	}
	for _, s := range []*hop.Snapshot{snap(false, 0), snap(true, 9.7e6), snap(true, 9.8e6), snap(false, 0), snap(false, 0)} {
		b.see(s)
	}
	want := `level=WARN msg="up: not the bottleneck: the path is limited elsewhere at about 9.7 Mbit/s" dir=up path_bps=9700000
level=INFO msg="up: the queue builds again: pi2hop is the bottleneck" dir=up
`
	if got := buf.String(); got != want {
		t.Errorf("log:\n%s\nwant:\n%s", got, want)
	}
	if strings.Count(buf.String(), "not the bottleneck") != 1 {
		t.Error("warned more than once")
	}
}
