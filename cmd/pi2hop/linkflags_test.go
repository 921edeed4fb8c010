package main

import (
	"strings"
	"testing"

	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/instance"
	"github.com/pi2hop/pi2hop/internal/clidoc"
	"github.com/pi2hop/pi2hop/internal/flagvalue"
	"github.com/pi2hop/pi2hop/shaper"
	"github.com/spf13/pflag"
)

// parseLinkFlags parses args into a fresh flag set as Run would and
// returns the direction's configuration.
func parseLinkFlags(t *testing.T, bidir bool, dir string, args ...string) (shaper.Config, aqm.Spec, error) {
	t.Helper()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	fs.SetOutput(new(strings.Builder))
	lf := addLinkFlags(fs, bidir)
	if err := fs.Parse(args); err != nil {
		return shaper.Config{}, aqm.Spec{}, clidoc.FlagError(fs, err)
	}
	return lf.direction(dir)
}

func constRate(t *testing.T, r shaper.Rate) uint64 {
	t.Helper()
	c, ok := r.(shaper.Const)
	if !ok {
		t.Fatalf("rate is %T, want shaper.Const", r)
	}
	return c.BitsPerSecond
}

func TestLinkFlagsDefaults(t *testing.T) {
	cfg, spec, err := parseLinkFlags(t, false, "")
	if err != nil {
		t.Fatal(err)
	}
	if got := constRate(t, cfg.Rate); got != 10_000_000 {
		t.Errorf("rate = %d, want 10 Mbit/s", got)
	}
	if cfg.Delay != 0 || cfg.Loss != nil {
		t.Errorf("delay %d, loss %v: want none", cfg.Delay, cfg.Loss)
	}
	want := aqm.DefaultConfig()
	want.MTU = 1500
	want.MemLimit = uint64(want.Limit) * 2 * 1500
	if spec.Kind != aqm.KindDualPI2 || spec.DualPI2 != want {
		t.Errorf("spec = %+v\nwant dualpi2 %+v", spec, want)
	}
}

func TestLinkFlagsDualPI2(t *testing.T) {
	tgt, tup, alpha, beta, err := aqm.Tune(200e6, 20e6)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args  []string
		check func(c aqm.Config) bool
	}{
		{[]string{"--limit", "100"}, func(c aqm.Config) bool { return c.Limit == 100 && c.MemLimit == 100*2*1500 }},
		{[]string{"--limit", "100p", "--mtu", "9000"}, func(c aqm.Config) bool { return c.Limit == 100 && c.MemLimit == 100*2*9000 && c.MTU == 9000 }},
		{[]string{"--limit", "100", "--memlimit", "64k"}, func(c aqm.Config) bool { return c.Limit == 100 && c.MemLimit == 65536 }},
		{[]string{"--step-thresh", "3p"}, func(c aqm.Config) bool { return c.StepInPackets && c.StepThresh == 3 }},
		{[]string{"--step-thresh", "4pkts"}, func(c aqm.Config) bool { return c.StepInPackets && c.StepThresh == 4 }},
		{[]string{"--step-thresh", "5packets"}, func(c aqm.Config) bool { return c.StepInPackets && c.StepThresh == 5 }},
		{[]string{"--step-thresh", "2ms"}, func(c aqm.Config) bool { return !c.StepInPackets && c.StepThresh == 2e6 }},
		{[]string{"--alpha", "0.16", "--beta", "3.2"}, func(c aqm.Config) bool { return c.Alpha == 40 && c.Beta == 819 }},
		{[]string{"--target", "5ms", "--tupdate", "10ms"}, func(c aqm.Config) bool { return c.Target == 5e6 && c.Tupdate == 10e6 }},
		{[]string{"--coupling", "3", "--classic-protection", "25%"}, func(c aqm.Config) bool { return c.Coupling == 3 && c.ClassicProtection == 25 }},
		{[]string{"--min-qlen-step", "2"}, func(c aqm.Config) bool { return c.MinQlenStep == 2 }},
		{[]string{"--overload", "overflow", "--drop-at", "enqueue"}, func(c aqm.Config) bool { return !c.DropOverload && c.DropEnqueue }},
		{[]string{"--overload", "drop_on_overload", "--drop-at", "drop_dequeue"}, func(c aqm.Config) bool { return c.DropOverload && !c.DropEnqueue }},
		{[]string{"--ecn-mask", "any"}, func(c aqm.Config) bool { return c.ECNMask == 3 }},
		{[]string{"--ecn-mask", "l4s_ect"}, func(c aqm.Config) bool { return c.ECNMask == 1 }},
		{[]string{"--max-rtt", "200ms", "--typical-rtt", "20ms"}, func(c aqm.Config) bool {
			return c.Target == tgt && c.Tupdate == tup && c.Alpha == alpha && c.Beta == beta
		}},
		// As in tc, auto-tuning wins over explicit PI values.
		{[]string{"--max-rtt", "200ms", "--typical-rtt", "20ms", "--target", "5ms", "--beta", "2"}, func(c aqm.Config) bool {
			return c.Target == tgt && c.Tupdate == tup && c.Alpha == alpha && c.Beta == beta
		}},
	}
	for _, tt := range tests {
		_, spec, err := parseLinkFlags(t, false, "", tt.args...)
		if err != nil {
			t.Errorf("%v: %v", tt.args, err)
			continue
		}
		if spec.Kind != aqm.KindDualPI2 || !tt.check(spec.DualPI2) {
			t.Errorf("%v: got %+v", tt.args, spec)
		}
	}
}

func TestLinkFlagsFIFO(t *testing.T) {
	tests := []struct {
		args []string
		want aqm.FIFOConfig
	}{
		{nil, aqm.FIFOConfig{Limit: instance.DefaultFIFOLimit}},
		{[]string{"--limit", "50"}, aqm.FIFOConfig{Limit: 50}},
		{[]string{"--memlimit", "64k"}, aqm.FIFOConfig{ByteLimit: 65536}},
		{[]string{"--limit", "50", "--memlimit", "3000"}, aqm.FIFOConfig{Limit: 50, ByteLimit: 3000}},
	}
	for _, tt := range tests {
		_, spec, err := parseLinkFlags(t, false, "", append([]string{"--aqm", "fifo"}, tt.args...)...)
		if err != nil {
			t.Errorf("%v: %v", tt.args, err)
			continue
		}
		if spec.Kind != aqm.KindFIFO || spec.FIFO != tt.want {
			t.Errorf("%v: got %+v, want fifo %+v", tt.args, spec, tt.want)
		}
	}
}

func TestLinkFlagsDirections(t *testing.T) {
	tests := []struct {
		args                 []string
		upRate, downRate     uint64
		upDelay, downDelay   int64
		upLossNil, downLossN bool
	}{
		{nil, 10e6, 10e6, 0, 0, true, true},
		{[]string{"--rate", "20mbit", "--down-rate", "1mbit"}, 20e6, 1e6, 0, 0, true, true},
		{[]string{"--up-rate", "500kbit", "--delay", "10ms", "--down-delay", "30ms"}, 500e3, 10e6, 10e6, 30e6, true, true},
		{[]string{"--loss", "1%"}, 10e6, 10e6, 0, 0, false, false},
	}
	for _, tt := range tests {
		up, _, err := parseLinkFlags(t, true, "up", tt.args...)
		if err != nil {
			t.Fatalf("%v: %v", tt.args, err)
		}
		down, _, err := parseLinkFlags(t, true, "down", tt.args...)
		if err != nil {
			t.Fatalf("%v: %v", tt.args, err)
		}
		if constRate(t, up.Rate) != tt.upRate || constRate(t, down.Rate) != tt.downRate {
			t.Errorf("%v: rates up %v down %v, want %d %d", tt.args, up.Rate, down.Rate, tt.upRate, tt.downRate)
		}
		if up.Delay != tt.upDelay || down.Delay != tt.downDelay {
			t.Errorf("%v: delays up %d down %d, want %d %d", tt.args, up.Delay, down.Delay, tt.upDelay, tt.downDelay)
		}
		if (up.Loss == nil) != tt.upLossNil || (down.Loss == nil) != tt.downLossN {
			t.Errorf("%v: loss up %v down %v", tt.args, up.Loss, down.Loss)
		}
	}
}

// TestLinkFlagsErrors checks that every bad value names the flag, the value
// and what is accepted, and that impossible combinations say why.
func TestLinkFlagsErrors(t *testing.T) {
	tests := []struct {
		bidir bool
		dir   string
		args  []string
		want  []string // substrings of the error
	}{
		{false, "", []string{"--rate", "10mb"}, []string{`--rate "10mb": `, "mbit"}},
		{false, "", []string{"--rate", "0mbit"}, []string{`--rate "0mbit": must be more than 0`}},
		{false, "", []string{"--delay", "-1ms"}, []string{`--delay "-1ms": must not be negative`}},
		{false, "", []string{"--delay", "10"}, []string{`--delay "10": give a unit, e.g. 10ms`}},
		{false, "", []string{"--rate", "10"}, []string{`--rate "10": give a unit, e.g. 10mbit`}},
		{false, "", []string{"--loss", "lots"}, []string{`--loss "lots": `}},
		{false, "", []string{"--aqm", "red"}, []string{`--aqm "red": want one of dualpi2, fifo`}},
		{false, "", []string{"--limit", "0"}, []string{`--limit "0": want a packet count in 1..4294967295`}},
		{false, "", []string{"--memlimit", "8g"}, []string{`--memlimit "8g": `}},
		{false, "", []string{"--tupdate", "0s"}, []string{`--tupdate "0s": must be at least 1µs`}},
		{false, "", []string{"--alpha", "0.001"}, []string{`--alpha "0.001": want a frequency in Hz from 1/256`}},
		{false, "", []string{"--beta", "NaN"}, []string{`--beta "NaN": want a frequency`}},
		{false, "", []string{"--coupling", "0"}, []string{`--coupling "0": must be in 1..255`}},
		{false, "", []string{"--coupling", "two"}, []string{`--coupling "two": want a whole number in 1..255`}},
		{false, "", []string{"--step-thresh", "x"}, []string{`--step-thresh "x": want a duration like 1ms`, "packet count like 3p"}},
		{false, "", []string{"--step-thresh", "5s"}, []string{`--step-thresh "5s": want a duration`}},
		{false, "", []string{"--overload", "maybe"}, []string{`--overload "maybe": want one of drop, overflow`}},
		{false, "", []string{"--drop-at", "both"}, []string{`--drop-at "both": want one of enqueue, dequeue`}},
		{false, "", []string{"--classic-protection", "101"}, []string{`--classic-protection "101": must be in 0..100%`}},
		{false, "", []string{"--ecn-mask", "ect0"}, []string{`--ecn-mask "ect0": want one of l4s, any`}},
		{false, "", []string{"--mtu", "40"}, []string{`--mtu "40": must be in 68..65535`}},
		{false, "", []string{"--typical-rtt", "300ms", "--max-rtt", "200ms"}, []string{"--max-rtt 200ms --typical-rtt 300ms: "}},
		{false, "", []string{"--max-rtt", "10s"}, []string{"--max-rtt 10s: ", "alpha"}},
		{false, "", []string{"--tupdate", "10s"}, []string{"--tupdate: 10s not in 1µs.."}},
		{false, "", []string{"--target", "5000s"}, []string{"--target: 1h23m20s not in"}},
		{false, "", []string{"--aqm", "fifo", "--coupling", "3"}, []string{"--coupling: configures dualpi2, docsis and means nothing with aqm fifo", "fifo"}},
		{false, "", []string{"--aqm", "fifo", "--overload", "overflow"}, []string{"--overload: configures dualpi2, docsis and means nothing with aqm fifo"}},
		{false, "", []string{"--rate", "1mbit", "--rate-trace", "x.trace"}, []string{"--rate-trace: ", "rate", "both set the rate"}},
		{false, "", []string{"--rate-trace", "/nonexistent/x.trace"}, []string{"--rate-trace: "}},
		{false, "up", nil, []string{`link direction "up": this command has one direction`}},
		{true, "sideways", nil, []string{`link direction "sideways": want up or down`}},
		{true, "up", []string{"--up-rate", "1mbit", "--up-rate-trace", "x"}, []string{"--up-rate-trace: ", "up-rate", "both set the rate"}},
		{true, "up", []string{"--up-delay", "-5ms"}, []string{`--up-delay "-5ms": must not be negative`}},
	}
	for _, tt := range tests {
		_, _, err := parseLinkFlags(t, tt.bidir, tt.dir, tt.args...)
		if err == nil {
			t.Errorf("%v: no error", tt.args)
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%v: error %q does not contain %q", tt.args, err, w)
			}
		}
	}
}

// With --max-rtt or --typical-rtt, explicit PI values are ignored, as tc
// does, and the warning names them.
func TestLinkFlagsTuneWarning(t *testing.T) {
	tests := []struct {
		args []string
		want string // "" = no warning
	}{
		{[]string{"--max-rtt", "200ms", "--target", "5ms", "--alpha", "0.1"}, "ignoring target, alpha"},
		{[]string{"--typical-rtt", "20ms", "--tupdate", "5ms", "--beta", "2"}, "ignoring tupdate, beta"},
		{[]string{"--max-rtt", "200ms"}, ""},
		{[]string{"--target", "5ms"}, ""},
	}
	for _, tt := range tests {
		fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
		lf := addLinkFlags(fs, false)
		if err := fs.Parse(tt.args); err != nil {
			t.Fatal(err)
		}
		w := strings.Join(lf.warnings(), "\n")
		if (tt.want == "") != (w == "") || !strings.Contains(w, tt.want) {
			t.Errorf("%v: warnings %q, want %q", tt.args, w, tt.want)
		}
		if tt.want != "" && !strings.Contains(w, "rtt_max is specified, ignore alpha/beta/tupdate/target") {
			t.Errorf("%v: warning %q does not quote tc's", tt.args, w)
		}
	}
}

func TestLinkFlagsUnlimited(t *testing.T) {
	for _, c := range []struct {
		args []string
		dir  string
		want shaper.Rate
	}{
		{[]string{"--rate", "unlimited"}, "up", shaper.Unlimited{}},
		{[]string{"--rate", "UNLIMITED"}, "down", shaper.Unlimited{}},
		{[]string{"--rate", "unlimited", "--down-rate", "5mbit"}, "down", shaper.Const{BitsPerSecond: 5e6}},
		{[]string{"--rate", "unlimited", "--down-rate", "5mbit"}, "up", shaper.Unlimited{}},
		{[]string{"--rate", "5mbit", "--up-rate", "unlimited"}, "up", shaper.Unlimited{}},
	} {
		cfg, _, err := parseLinkFlags(t, true, c.dir, c.args...)
		if err != nil || cfg.Rate != c.want {
			t.Errorf("%v (%s): rate %v, %v; want %v", c.args, c.dir, cfg.Rate, err, c.want)
		}
	}
	if _, _, err := parseLinkFlags(t, true, "up", "--rate", "0"); err == nil {
		t.Error("--rate 0 accepted: 0 is not how to say unlimited")
	}
	var v flagvalue.LinkRate
	v.Set("unlimited")
	if v.String() != "unlimited" {
		t.Errorf("String() = %q, want unlimited (the flag's value as given)", v.String())
	}
}
