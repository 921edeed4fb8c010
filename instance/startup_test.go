package instance

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/hop"
	"github.com/pi2hop/pi2hop/internal/tunpair"
	"github.com/pi2hop/pi2hop/shaper"
	"github.com/pi2hop/pi2hop/topology"
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
			"pi2hop shell \"lab2\": codel\n" +
				"  up:   5mbit, loss 1%\n" +
				"  down: 20mbit, delay 30ms\n" +
				"host side 10.254.1.1, shell side 10.254.1.2\n" +
				"stats: pi2hop stats --name lab2   stop: exit the shell (or Ctrl-C)\n"},
	}
	for _, tt := range tests {
		got := startupMessage(tt.kind, tt.inst, tt.c, Settings{}, startupExtras{}, topo)
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

// Everything in force that differs from the defaults is named: the
// profile and what it sets (a rate trace per direction, jitter), the ECN
// fault and where it acts, the capture file, the metrics and the view.
func TestStartupMessageNamesWhatIsInForce(t *testing.T) {
	s, err := ProfileSettings("lte")
	if err != nil {
		t.Fatal(err)
	}
	fault, agg := "bleach,after", Aggregate{Interval: int64(4 * time.Millisecond), Bytes: 6000}
	s.ECNFault, s.UpAggregate = &fault, &agg
	c, err := s.Resolve("x")
	if err != nil {
		t.Fatal(err)
	}
	topo := fakeTopo{stop: "Ctrl-C"}
	x := startupExtras{Config: "lab.toml", Profile: "lte", Capture: "c.pcapng", Metrics: "http://127.0.0.1:9101/metrics", Web: "http://127.0.0.1:8080/"}
	got := startupMessage("shell", "x", c, s, x, topo)
	want := "pi2hop shell \"x\": config lab.toml, profile lte, dualpi2\n" +
		"  up:   rate trace builtin:lte-up, delay 20ms, jitter 4ms uniform, aggregate 4ms/6000B, ECN fault bleach after the queue\n" +
		"  down: rate trace builtin:lte-down, delay 20ms, jitter 4ms uniform, ECN fault bleach after the queue\n" +
		"capture: c.pcapng\n" +
		"metrics: http://127.0.0.1:9101/metrics\n" +
		"live view: http://127.0.0.1:8080/\n" +
		"stats: pi2hop stats --name x   stop: Ctrl-C\n"
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

// A fault's spec is kept, with where it acts said in words.
func TestFaultWords(t *testing.T) {
	for _, tt := range []struct{ spec, want string }{
		{"bleach", "ECN fault bleach before the queue"},
		{"ect1-to-ect0,after", "ECN fault ect1-to-ect0 after the queue"},
		{"ce-bleach,after,after=10p,share=50%", "ECN fault ce-bleach,after=10p,share=50% after the queue"},
	} {
		f, err := shaper.ParseFault(tt.spec)
		if err != nil {
			t.Fatalf("%s: %v", tt.spec, err)
		}
		if got := faultWords(f); got != tt.want {
			t.Errorf("%s: %q, want %q", tt.spec, got, tt.want)
		}
	}
}

// The command's environment has every variable of ShellEnv with the
// pair's addresses, and the start-up lines name each variable.
func TestShellEnvironment(t *testing.T) {
	p := &topology.Pair{Ends: &tunpair.Ends{ClientNS: "x-shell",
		ServerAddr: netip.MustParseAddr("10.254.7.1"), ServerAddr6: netip.MustParseAddr("fd00:254:7::1"),
		ClientAddr: netip.MustParseAddr("10.254.7.2"), ClientAddr6: netip.MustParseAddr("fd00:254:7::2")}}
	want := []string{"PI2HOP_HOST=10.254.7.1", "PI2HOP_HOST6=fd00:254:7::1", "PI2HOP_ADDR=10.254.7.2",
		"PI2HOP_ADDR6=fd00:254:7::2", "PI2HOP_NETNS=x-shell"}
	if got := shellEnv(p); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("shellEnv: %q, want %q", got, want)
	}
	lines, _ := (&Shell{Args: []string{"/bin/true"}, pair: p}).Summary()
	text := strings.Join(lines, "\n")
	for _, v := range ShellEnv {
		if !strings.Contains(text, "$"+v.Name) {
			t.Errorf("start-up lines do not name $%s:\n%s", v.Name, text)
		}
	}
	if !strings.Contains(text, "the command reaches this host at 10.254.7.1 / fd00:254:7::1: $PI2HOP_HOST, $PI2HOP_HOST6") {
		t.Errorf("start-up lines:\n%s", text)
	}
}
