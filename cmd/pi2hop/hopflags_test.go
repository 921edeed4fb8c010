package main

import (
	"strings"
	"testing"
	"time"

	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/shaper"
)

func TestHopConfigBothDirections(t *testing.T) {
	f, err := parseLinkArgs([]string{"--lan", "eth1", "--rate", "20mbit", "--down-rate", "5mbit", "--up-delay", "7ms", "--seed", "9"})
	if err != nil {
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

func TestMergeEdit(t *testing.T) {
	base := []string{"--name=gw", "--lan=eth1", "--rate=20mbit", "--up-rate=8mbit", "--delay=5ms"}
	start, err := parseLinkArgs(base)
	if err != nil {
		t.Fatal(err)
	}
	cur, err := start.hopConfig("gw")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		set     []string
		wantErr string
		check   func(t *testing.T, upRate, downRate shaper.Rate, upDelay, downDelay *int64, queue bool, loss bool)
	}{
		{name: "down rate only", set: []string{"--down-rate=5mbit"},
			check: func(t *testing.T, up, down shaper.Rate, ud, dd *int64, q, l bool) {
				if up != nil || down != (shaper.Const{BitsPerSecond: 5e6}) || ud != nil || dd != nil || q || l {
					t.Errorf("edit up %v down %v delays %v %v queue %v loss %v", up, down, ud, dd, q, l)
				}
			}},
		{name: "shared rate keeps the uplink's own", set: []string{"--rate=30mbit"},
			check: func(t *testing.T, up, down shaper.Rate, ud, dd *int64, q, l bool) {
				if up != nil || down != (shaper.Const{BitsPerSecond: 30e6}) {
					t.Errorf("edit up %v down %v; want only down to 30mbit", up, down)
				}
			}},
		{name: "delay both", set: []string{"--delay=30ms"},
			check: func(t *testing.T, up, down shaper.Rate, ud, dd *int64, q, l bool) {
				if ud == nil || dd == nil || *ud != int64(30*time.Millisecond) || up != nil {
					t.Errorf("delays %v %v rate %v", ud, dd, up)
				}
			}},
		{name: "aqm knob", set: []string{"--target=5ms"},
			check: func(t *testing.T, up, down shaper.Rate, ud, dd *int64, q, l bool) {
				if !q {
					t.Errorf("queue change missing")
				}
			}},
		{name: "loss", set: []string{"--loss=1%"},
			check: func(t *testing.T, up, down shaper.Rate, ud, dd *int64, q, l bool) {
				if !l || q || up != nil {
					t.Errorf("loss %v queue %v rate %v", l, q, up)
				}
			}},
		{name: "nothing", set: nil, wantErr: "no link flag"},
		{name: "fixed", set: []string{"--mtu=9000"}, wantErr: "--mtu cannot change"},
		{name: "kind", set: []string{"--aqm=fifo"}, wantErr: "--aqm cannot change"},
		{name: "invalid merged", set: []string{"--coupling=0"}, wantErr: "coupling"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := mergeEdit(base, tt.set, cur)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, e.Up.Rate, e.Down.Rate, e.Up.Delay, e.Down.Delay, e.Up.Queue != nil || e.Down.Queue != nil, e.Up.SetLoss && e.Down.SetLoss)
		})
	}
}

func TestInstanceNames(t *testing.T) {
	for _, tt := range []struct {
		name string
		ok   bool
	}{{"pi2hop", true}, {"a", true}, {"gw-1.x_2", true}, {"", false}, {"-x", false}, {".x", false},
		{"thirteenchars", false}, {"a/b", false}, {"../x", false}} {
		if err := checkInstanceName(tt.name); (err == nil) != tt.ok {
			t.Errorf("checkInstanceName(%q) = %v, want ok %v", tt.name, err, tt.ok)
		}
	}
}

func TestMetricsListenAddr(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{":9100", "127.0.0.1:9100"}, {"0.0.0.0:9100", "0.0.0.0:9100"}, {"[::1]:80", "[::1]:80"}, {"9100", ""},
	} {
		got, err := metricsListenAddr(tt.in)
		if got != tt.want || (err != nil) != (tt.want == "") {
			t.Errorf("metricsListenAddr(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

func TestGatewayTablesStable(t *testing.T) {
	u1, d1, p1 := gatewayTables("pi2hop")
	u2, d2, p2 := gatewayTables("pi2hop")
	u3, _, _ := gatewayTables("other")
	if u1 != u2 || d1 != d2 || p1 != p2 || d1 != u1+1 || u1 == u3 {
		t.Errorf("tables %d %d %d / %d %d %d / %d", u1, d1, p1, u2, d2, p2, u3)
	}
	if p1 <= 0 || p1 >= 32766 {
		t.Errorf("rule priority %d must sit between local (0) and main (32766)", p1)
	}
}
