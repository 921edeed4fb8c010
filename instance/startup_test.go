package instance

import (
	"strings"
	"testing"
	"time"

	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/hop"
	"github.com/pi2hop/pi2hop/shaper"
)

type fakeTopo struct {
	Topology
	lines []string
	stop  string
}

func (f fakeTopo) Summary() ([]string, string) { return f.lines, f.stop }

// The start-up message is a few lines a person reads: what runs with
// which link, where the sides are, how to see stats and stop.
func TestStartupMessage(t *testing.T) {
	dir := func(bps uint64, delay time.Duration, loss shaper.Loss, kind string) hop.DirConfig {
		return hop.DirConfig{Link: shaper.Config{Rate: shaper.Const{BitsPerSecond: bps}, Delay: int64(delay), Loss: loss}, Queue: aqm.Spec{Kind: kind}}
	}
	topo := fakeTopo{lines: []string{"host side 10.254.1.1, shell side 10.254.1.2"}, stop: "exit the shell (or Ctrl-C)"}
	tests := []struct {
		name, kind, inst string
		c                hop.Config
		want             string
	}{
		{"symmetric", "shell", DefaultName,
			hop.Config{Up: dir(10e6, 10*time.Millisecond, nil, "dualpi2"), Down: dir(10e6, 10*time.Millisecond, nil, "dualpi2")},
			"pi2hop shell \"pi2hop\": 10mbit up/down, delay 10ms, dualpi2\n" +
				"host side 10.254.1.1, shell side 10.254.1.2\n" +
				"stats: pi2hop stats   stop: exit the shell (or Ctrl-C)\n"},
		{"asymmetric, named", "shell", "lab2",
			hop.Config{Up: dir(5e6, 0, shaper.IID{P: 0.01}, "codel"), Down: dir(20e6, 30*time.Millisecond, nil, "codel")},
			"pi2hop shell \"lab2\": 5mbit up, 20mbit down, delay 0s up, 30ms down, loss 1% up, none down, codel\n" +
				"host side 10.254.1.1, shell side 10.254.1.2\n" +
				"stats: pi2hop stats --name lab2   stop: exit the shell (or Ctrl-C)\n"},
	}
	for _, tt := range tests {
		got := startupMessage(tt.kind, tt.inst, tt.c, topo)
		if got != tt.want {
			t.Errorf("%s:\n%s\nwant\n%s", tt.name, got, tt.want)
		}
		for _, l := range strings.Split(strings.TrimSpace(got), "\n") {
			if len(l) > 100 {
				t.Errorf("%s: line of %d characters: %q", tt.name, len(l), l)
			}
		}
	}
}
