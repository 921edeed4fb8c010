package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/instance"
	"github.com/pi2hop/pi2hop/instance/profile"
	"github.com/pi2hop/pi2hop/replay"
	"github.com/pi2hop/pi2hop/shaper"
	"github.com/spf13/pflag"
)

// profileFlags parses args as replay (bidir false) or shell, run and
// share (bidir true) declare their link flags.
func profileFlags(t *testing.T, bidir bool, args ...string) *linkFlags {
	t.Helper()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	fs.SetOutput(new(strings.Builder))
	lf := addLinkFlags(fs, bidir)
	lf.addProfileFlag()
	if err := fs.Parse(args); err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	return lf
}

// steady offers n packets of 1500 bytes, ECT(1), one every gap ns from 0:
// more than the link can carry, so it is never idle.
type steady struct {
	gap   int64
	n, at int
}

func (s *steady) Next(p *replay.Packet) (bool, error) {
	if s.at == s.n {
		return false, nil
	}
	*p = replay.Packet{Time: int64(s.at) * s.gap, Len: 1500, ECN: aqm.ECT1, Flow: 1}
	s.at++
	return true, nil
}

// delivered records each delivered packet's link exit and release.
type delivered struct{ dep, at []int64 }

func (d *delivered) Arrival(*replay.Packet) error { return nil }
func (d *delivered) Depart(_ *replay.Packet, ev *shaper.Event) error {
	d.dep, d.at = append(d.dep, ev.Dep), append(d.at, ev.At)
	return nil
}
func (d *delivered) Drop(*replay.Packet, *shaper.Event, replay.DropPoint) error { return nil }
func (d *delivered) Update(int64, *aqm.Stats) error                             { return nil }

// traceOpportunities counts a shipped trace's delivery opportunities (its
// lines that are not comments) and reads its loop length (the last line).
func traceOpportunities(t *testing.T, name string) (int, int64) {
	t.Helper()
	data, err := os.ReadFile("../../instance/profile/traces/" + name + ".trace")
	if err != nil {
		t.Fatal(err)
	}
	n, last := 0, ""
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		if l := sc.Text(); l != "" && l[0] != '#' {
			n, last = n+1, l
		}
	}
	loop, err := strconv.ParseInt(last, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n, loop
}

// Each profile's link in virtual time, as replay (one direction, picked by
// --direction) and the live commands (two) build it. A saturating load
// shows the rate: the packets off the link by the end of a window. The
// delay line shows the base delay: release minus link exit, within the
// jitter. The figures are the profiles' own, worked out by hand: a
// 1500-byte packet takes 12000 bits / rate on the link; wifi sends a burst
// every 4 ms of the 44 packets that cross 65535 bytes (43·1500 = 64500);
// a trace sends one packet per opportunity in its file.
func TestProfileReplayFigures(t *testing.T) {
	downOpps, downLoop := traceOpportunities(t, "lte-down")
	upOpps, upLoop := traceOpportunities(t, "lte-up")
	if downLoop != 60_000 || upLoop != 60_000 {
		t.Fatalf("trace loops %d, %d ms: want 60 s", downLoop, upLoop)
	}
	ms := int64(time.Millisecond)
	tests := []struct {
		name     string
		args     []string
		bidir    bool   // built as shell, run and share build it
		dir      string // with bidir
		gap      int64  // ns between offered packets
		n        int
		window   int64 // ns
		sent     int   // packets off the link by window
		firstDep int64 // the first packet's link exit
		minDelay int64 // release - link exit
		maxDelay int64
		kind     string
	}{
		{"docsis-ll down", []string{"--profile", "docsis-ll"}, true, "down", 200_000, 6000, 1000 * ms, 4166, 240_000, 8 * ms, 8 * ms, aqm.KindDOCSIS},
		{"docsis-ll up (replay)", []string{"--profile", "docsis-ll", "--direction", "up"}, false, "", 1_000_000, 1200, 1000 * ms, 833, 1_200_000, 8 * ms, 8 * ms, aqm.KindDOCSIS},
		{"geo-sat down (replay)", []string{"--profile", "geo-sat"}, false, "", 400_000, 3000, 1000 * ms, 2083, 480_000, 300 * ms, 300 * ms, aqm.KindDualPI2},
		{"geo-sat up", []string{"--profile", "geo-sat"}, true, "up", 3_000_000, 400, 1000 * ms, 250, 4_000_000, 300 * ms, 300 * ms, aqm.KindDualPI2},
		{"wifi down", []string{"--profile", "wifi"}, true, "down", 50_000, 24000, 1000 * ms, 250 * 44, 60_000, 3 * ms, 7 * ms, aqm.KindDualPI2},
		{"wifi up (replay)", []string{"--profile", "wifi", "--direction", "up"}, false, "", 50_000, 24000, 1000 * ms, 250 * 44, 60_000, 3 * ms, 7 * ms, aqm.KindDualPI2},
		{"dsl down", []string{"--profile", "dsl"}, true, "down", 500_000, 3000, 1000 * ms, 1333, 750_000, 12 * ms, 12 * ms, aqm.KindDualPI2},
		{"dsl up (replay)", []string{"--profile", "dsl", "--direction", "up"}, false, "", 10_000_000, 120, 1000 * ms, 83, 12_000_000, 12 * ms, 12 * ms, aqm.KindDualPI2},
		{"fiber down (replay)", []string{"--profile", "fiber"}, false, "", 10_000, 120_000, 1000 * ms, 83333, 12_000, 4 * ms, 4 * ms, aqm.KindDualPI2},
		// An opportunity at ms t carries its 1500 bytes from t, so the
		// last one of the loop (60000 ms) is done half a ms later, before
		// the next loop's first (at 60001 ms at the earliest). A FIFO
		// keeps the link busy through the outages, where DualPI2 at full
		// probability would drop its queue empty and waste opportunities.
		{"lte down (replay)", []string{"--profile", "lte", "--aqm", "fifo"}, false, "", 500_000, 121_000, 60_000*ms + ms/2, downOpps, -1, 16 * ms, 24 * ms, aqm.KindFIFO},
		{"lte up", []string{"--profile", "lte", "--aqm", "fifo"}, true, "up", 500_000, 121_000, 60_000*ms + ms/2, upOpps, -1, 16 * ms, 24 * ms, aqm.KindFIFO},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lf := profileFlags(t, tt.bidir, tt.args...)
			link, spec, err := lf.direction(tt.dir)
			if err != nil {
				t.Fatal(err)
			}
			if spec.Kind != tt.kind {
				t.Errorf("aqm %s, want %s", spec.Kind, tt.kind)
			}
			eng, err := replay.New(replay.Config{Link: link, Queue: spec, Seed: 1})
			if err != nil {
				t.Fatal(err)
			}
			var d delivered
			if _, err := eng.Run(context.Background(), &steady{gap: tt.gap, n: tt.n}, &d); err != nil {
				t.Fatal(err)
			}
			sent := 0
			for _, dep := range d.dep {
				if dep <= tt.window {
					sent++
				}
			}
			if sent != tt.sent {
				t.Errorf("%d packets off the link by %v, want %d (%.3f Mbit/s, want %.3f)", sent, time.Duration(tt.window), tt.sent,
					float64(sent)*12000/float64(tt.window)*1e3, float64(tt.sent)*12000/float64(tt.window)*1e3)
			}
			if tt.firstDep >= 0 && (len(d.dep) == 0 || d.dep[0] != tt.firstDep) {
				t.Errorf("first packet off the link at %v, want %v", d.dep[:min(1, len(d.dep))], time.Duration(tt.firstDep))
			}
			lo, hi := int64(1<<62), int64(0)
			for i := range d.dep {
				lo, hi = min(lo, d.at[i]-d.dep[i]), max(hi, d.at[i]-d.dep[i])
			}
			if lo < tt.minDelay || hi > tt.maxDelay {
				t.Errorf("delay line %v..%v, want within %v..%v", time.Duration(lo), time.Duration(hi), time.Duration(tt.minDelay), time.Duration(tt.maxDelay))
			}
			// Jitter spreads the delay (the delay line never reorders, so
			// packets close together lift each other's floor).
			if spread := tt.maxDelay - tt.minDelay; spread > 0 && hi-lo < spread/4 {
				t.Errorf("delay line %v..%v: jitter uses less than a quarter of %v", time.Duration(lo), time.Duration(hi), time.Duration(spread))
			}
		})
	}
}

// replay --profile through the command: the summary's configuration
// names what the profile set, and a flag given wins over it.
func TestReplayProfileCommand(t *testing.T) {
	trace := "time_ns,bytes,ecn\n0,1500,1\n0,1500,1\n0,1500,1\n"
	tests := []struct {
		args    []string
		config  map[string]any
		spacing int64 // between the three packets' dequeues
	}{
		{[]string{"--profile", "docsis-ll"}, map[string]any{"aqm": "docsis", "delay": 8e6, "queue-protection": true, "maxth": 1e6}, 240_000},
		{[]string{"--profile", "lte"}, map[string]any{"aqm": "dualpi2", "rate-trace": "builtin:lte-down", "delay": 20e6}, -1},
		{[]string{"--profile", "lte", "--direction", "up"}, map[string]any{"rate-trace": "builtin:lte-up", "profile": "lte", "direction": "up", "jitter": "4ms uniform"}, -1},
		{[]string{"--profile", "wifi"}, map[string]any{"profile": "wifi", "direction": "down", "aggregate": "4ms,65535b", "jitter": "2ms uniform", "rate_bps": 200e6}, -1},
		{[]string{"--profile", "geo-sat", "--direction", "up"}, map[string]any{"delay": 300e6}, 4_000_000},
		{[]string{"--profile", "geo-sat", "--rate", "10mbit", "--delay", "1ms"}, map[string]any{"delay": 1e6}, 1_200_000},
		{[]string{"--profile", "lte", "--rate", "12mbit"}, map[string]any{"delay": 20e6}, 1_000_000},
		{[]string{"--profile", "docsis-ll", "--aqm", "fifo"}, map[string]any{"aqm": "fifo", "delay": 8e6}, 240_000},
	}
	for _, tt := range tests {
		out, err := runCLI(t, trace, append([]string{"replay", "--trace", "-"}, tt.args...)...)
		if err != nil {
			t.Errorf("%v: %v", tt.args, err)
			continue
		}
		r := parseReplay(t, out)
		for k, want := range tt.config {
			if got := r.summary.Config[k]; got != want {
				t.Errorf("%v: config %s = %v, want %v", tt.args, k, got, want)
			}
		}
		if tt.spacing > 0 {
			for i := 1; i < len(r.pkts); i++ {
				if got := *r.byRow[i].Deq - *r.byRow[i-1].Deq; got != tt.spacing {
					t.Errorf("%v: packet %d dequeued %v after the one before, want %v", tt.args, i, time.Duration(got), time.Duration(tt.spacing))
				}
			}
		}
	}
}

func TestProfileErrors(t *testing.T) {
	trace := "time_ns,bytes,ecn\n0,1500,1\n"
	for _, tt := range []struct {
		args []string
		want []string
	}{
		{[]string{"--profile", "cable"}, append([]string{`--profile`, `"cable"`}, profile.Names()...)},
		{[]string{"--direction", "up"}, []string{"--direction", "--profile"}},
		{[]string{"--profile", "lte", "--direction", "sideways"}, []string{"--direction", "down, up"}},
		{[]string{"--rate-trace", "builtin:5g"}, []string{"--rate-trace", "builtin:lte-down"}},
	} {
		_, err := runCLI(t, trace, append([]string{"replay", "--trace", "-"}, tt.args...)...)
		for _, w := range tt.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%v: error %v, want it to name %s", tt.args, err, w)
			}
		}
	}
	for _, cmd := range []string{"shell", "run", "share"} {
		_, err := runCLI(t, "", cmd, "--profile", "cable")
		if err == nil || !strings.Contains(err.Error(), strings.Join(profile.Names(), ", ")) {
			t.Errorf("%s --profile cable: %v, want the known profiles listed", cmd, err)
		}
	}
}

// A profile is the flags it lists: giving them by hand builds the same
// settings, in both directions.
func TestProfileIsItsFlags(t *testing.T) {
	for _, p := range profile.All() {
		named, hand := profileFlags(t, true, "--profile", p.Name), profileFlags(t, true, instance.ProfileArgs(p)...)
		byName, byHand := named.settings(), hand.settings()
		if !reflect.DeepEqual(byName, byHand) {
			t.Errorf("%s: --profile gives %v, its flags %v", p.Name, byName.Given(), byHand.Given())
		}
		// What run, shell and share hand the hop.
		cName, err := named.hopConfig("p")
		if err != nil {
			t.Fatalf("%s: %v", p.Name, err)
		}
		cHand, err := hand.hopConfig("p")
		if err != nil {
			t.Fatalf("%s by hand: %v", p.Name, err)
		}
		if !reflect.DeepEqual(cName, cHand) {
			t.Errorf("%s: --profile gives the hop\n%+v\nits flags\n%+v", p.Name, cName, cHand)
		}
	}
}

func TestProfilesCommand(t *testing.T) {
	out, err := runCLI(t, "", "profiles")
	if err != nil {
		t.Fatal(err)
	}
	downOpps, loop := traceOpportunities(t, "lte-down")
	for _, want := range []string{
		"docsis-ll: DOCSIS 3.1",
		"  flags: --down-rate 50mbit --up-rate 10mbit --delay 8ms --aqm docsis --queue-protection=true --target 10ms --maxth 1ms --coupling 2 --docsis-classic pie\n",
		"  flags: --down-rate-trace builtin:lte-down --up-rate-trace builtin:lte-up --delay 20ms --jitter 4ms\n",
		"  flags: --rate 200mbit --aggregate 4ms,65535b --jitter 2ms --delay 5ms\n",
		"geo-sat: a consumer GEO satellite",
		"  flags: --down-rate 25mbit --up-rate 3mbit --delay 300ms\n",
		"  flags: --down-rate 16mbit --up-rate 1mbit --delay 12ms\n",
		"  flags: --rate 1gbit --delay 4ms\n",
		"  builtin:lte-down: mean " + shaper.FormatRate(uint64(downOpps)*12000*1000/uint64(loop)) + " over a 60 s loop\n",
		"HughesNet", "RFC 9957", "Sprout",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("profiles: no %q in\n%s", want, out)
		}
	}
	if strings.Count(out, "\n  flags: ") != len(profile.Names()) {
		t.Errorf("profiles: %d flag lines for %d profiles", strings.Count(out, "\n  flags: "), len(profile.Names()))
	}

	out, err = runCLI(t, "", "profiles", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Profiles []struct {
			Name    string
			Title   string
			Flags   []struct{ Flag, Value string }
			Args    []string
			Sources []string
			Traces  []struct {
				Name          string
				Opportunities int
				LoopMs        int64  `json:"loop_ms"`
				MeanBPS       uint64 `json:"mean_bps"`
			}
		}
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v in %s", err, out)
	}
	var names []string
	for _, p := range got.Profiles {
		names = append(names, p.Name)
		if p.Title == "" || len(p.Flags) == 0 || len(p.Args) < len(p.Flags) || len(p.Sources) == 0 {
			t.Errorf("%s: title %q, %d flags, %d args, %d sources", p.Name, p.Title, len(p.Flags), len(p.Args), len(p.Sources))
		}
		for _, tr := range p.Traces {
			n, loop := traceOpportunities(t, strings.TrimPrefix(tr.Name, "builtin:"))
			if tr.Opportunities != n || tr.LoopMs != loop || tr.MeanBPS != uint64(n)*12000*1000/uint64(loop) {
				t.Errorf("%s: %+v, want %d opportunities per %d ms", p.Name, tr, n, loop)
			}
		}
	}
	if !reflect.DeepEqual(names, profile.Names()) {
		t.Errorf("profiles --json lists %v, want %v", names, profile.Names())
	}
	// docs/profiles.md's table has every profile and each trace's mean.
	doc, err := os.ReadFile("../../docs/profiles.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range got.Profiles {
		if !strings.Contains(string(doc), "| `"+p.Name+"` |") {
			t.Errorf("docs/profiles.md: no row for %s", p.Name)
		}
		for _, tr := range p.Traces {
			if mean := fmt.Sprintf("`%s`, mean %.2f Mbit/s", tr.Name, float64(tr.MeanBPS)/1e6); !strings.Contains(string(doc), mean) {
				t.Errorf("docs/profiles.md: no %q", mean)
			}
		}
	}
	if len(got.Profiles[1].Traces) != 2 {
		t.Errorf("lte: traces %+v, want lte-down and lte-up", got.Profiles[1].Traces)
	}
}
