package main

import (
	"strings"
	"testing"
	"time"

	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/instance"
	"github.com/pi2hop/pi2hop/shaper"
	"github.com/spf13/pflag"
)

func TestHopConfigBothDirections(t *testing.T) {
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	fs.SetOutput(new(strings.Builder))
	f := addLinkFlags(fs, true)
	if err := fs.Parse([]string{"--rate", "20mbit", "--down-rate", "5mbit", "--up-delay", "7ms", "--seed", "9"}); err != nil {
		t.Fatal(err)
	}
	c, err := f.hopConfig("x")
	if err != nil {
		t.Fatal(err)
	}
	if c.Name != "x" || c.Seed != 9 || c.MTU != 1500 {
		t.Errorf("name %q seed %d mtu %d", c.Name, c.Seed, c.MTU)
	}
	if c.Up.Link.Rate != (shaper.Const{BitsPerSecond: 20e6}) || c.Down.Link.Rate != (shaper.Const{BitsPerSecond: 5e6}) {
		t.Errorf("rates up %v down %v, want 20mbit 5mbit", c.Up.Link.Rate, c.Down.Link.Rate)
	}
	if c.Up.Link.Delay != int64(7*time.Millisecond) || c.Down.Link.Delay != 0 {
		t.Errorf("delays up %d down %d", c.Up.Link.Delay, c.Down.Link.Delay)
	}
	if c.Up.Queue.Kind != aqm.KindDualPI2 {
		t.Errorf("queue %q", c.Up.Queue.Kind)
	}
}

// Every flag of the link maps to a setting, so a set request carries it.
func TestEveryLinkFlagIsASetting(t *testing.T) {
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	f := addLinkFlags(fs, true)
	fs.VisitAll(func(fl *pflag.Flag) {
		fs.Lookup(fl.Name).Changed = true
	})
	given := f.settings().Given()
	fs.VisitAll(func(fl *pflag.Flag) {
		if fl.Hidden {
			return // tc's keyword for one of them: TestTCAliases
		}
		found := false
		for _, k := range given {
			found = found || instance.FlagOf(k) == fl.Name
		}
		if !found {
			t.Errorf("--%s has no instance.Settings field", fl.Name)
		}
	})
}

// --tun names behaviours (offload, plain); water, the library behind
// plain, still parses as plain but help no longer shows it.
func TestTunBackendNames(t *testing.T) {
	for _, in := range []string{"plain", "water"} {
		fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
		f := addInstanceFlags(fs)
		if err := fs.Parse([]string{"--tun", in}); err != nil || f.tun.Val != "plain" {
			t.Errorf("--tun %s: %q, %v; want plain", in, f.tun.Val, err)
		}
	}
	help, _, err := runOut("help", "run")
	if err != nil || !strings.Contains(help, "or plain (") || strings.Contains(help, "water") {
		t.Errorf("help run (err %v) should offer plain and not name water:\n%s", err, help)
	}
}
