package flagvalue

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

// Every type is a pflag.Value.
var _ = []pflag.Value{&Rate{}, &Size{}, &Duration{}, &CPULatency{}, &Count{}, &IntRange{},
	&Gain{}, &Step{}, &Choice{}, &Loss{}, &Jitter{}, &Aggregate{}, &Bool{}, &Text{}, &Uint64{}}

// TestSet feeds each type good and bad text: a good one prints back as
// String says (1.5ms, 3p, 64k as 65536b, 1mbps as 8mbit), a bad one
// fails with the exact words the command line shows after `--flag "x": `.
func TestSet(t *testing.T) {
	codel := func() pflag.Value { return &Duration{Min: time.Microsecond} }
	tests := []struct {
		name  string
		v     func() pflag.Value
		in    string
		print string // String after Set; "" with err
		err   string
	}{
		{"rate", func() pflag.Value { return &Rate{} }, "10mbit", "10mbit", ""},
		{"rate bytes/s", func() pflag.Value { return &Rate{} }, "1mbps", "8mbit", ""},
		{"rate zero", func() pflag.Value { return &Rate{} }, "0mbit", "", "must be more than 0 bit/s"},
		{"rate unit", func() pflag.Value { return &Rate{} }, "10mb", "", `"10mb": unknown unit "mb"`},
		{"size k is 1024", func() pflag.Value { return &Size{Max: math.MaxUint32} }, "64k", "65536b", ""},
		{"size zero", func() pflag.Value { return &Size{Max: 1000} }, "0", "", "must be in 1..1000 bytes"},
		{"size max", func() pflag.Value { return &Size{Max: 1000} }, "1001b", "", "must be in 1..1000 bytes"},
		{"duration", codel, "1500us", "1.5ms", ""},
		{"duration min", codel, "0s", "", "must be at least 1µs"},
		{"duration negative", func() pflag.Value { return &Duration{} }, "-1ms", "", "must not be negative"},
		// tc(8) reads a bare time as microseconds: refused, except 0.
		{"duration no unit", func() pflag.Value { return &Duration{} }, "10", "", "give a unit, e.g. 10ms, 250us or 1.5s (tc would read a bare number as microseconds)"},
		{"duration zero", func() pflag.Value { return &Duration{D: time.Second} }, "0", "0s", ""},
		{"duration tc msec", func() pflag.Value { return &Duration{} }, "10msec", "10ms", ""},
		{"duration tc sec", func() pflag.Value { return &Duration{} }, "2sec", "2s", ""},
		{"duration tc usecs", func() pflag.Value { return &Duration{} }, "250usecs", "250µs", ""},
		{"duration word", func() pflag.Value { return &Duration{} }, "soon", "", "want a duration like 10ms, 250us or 1.5s (tc's 10msec, 250usec, 2sec too)"},
		{"durations", func() pflag.Value { return &Durations{} }, "15ms,50msec", "15ms,50ms", ""},
		{"durations bare", func() pflag.Value { return &Durations{} }, "15ms,50", "", `"50": give a unit`},
		// tc(8) reads a bare rate as bit/s; "--rate 10" is refused.
		{"rate bare", func() pflag.Value { return &Rate{} }, "10", "", `"10": give a unit, e.g. 10mbit (tc would read a bare number as bit/s)`},
		// tc(8) reads a bare size as bytes, as here.
		{"size bare is bytes", func() pflag.Value { return &Size{Max: math.MaxUint32} }, "1500", "1500b", ""},
		// netem reads "loss 1" as 1 %.
		{"loss bare is percent", func() pflag.Value { return &Loss{} }, "1", "1", ""},
		{"count p suffix", func() pflag.Value { return &Count{Min: 1, Max: 10} }, "10p", "10", ""},
		{"count range", func() pflag.Value { return &Count{Min: 1, Max: math.MaxUint32} }, "0", "", "want a packet count in 1..4294967295, like 100 or 100p"},
		{"int unit", func() pflag.Value { return &IntRange{Max: 100, Unit: "%"} }, "30%", "30", ""},
		{"int range", func() pflag.Value { return &IntRange{Max: 100, Unit: "%"} }, "101", "", "must be in 0..100%"},
		{"int word", func() pflag.Value { return &IntRange{Min: 1, Max: 255} }, "two", "", "want a whole number in 1..255"},
		// tc sends trunc(Hz·256): 0.16 Hz is 40 on the wire, 40/256 = 0.15625 Hz.
		{"gain", func() pflag.Value { return &Gain{} }, "0.16", "0.15625", ""},
		{"gain below 1/256", func() pflag.Value { return &Gain{} }, "0.001", "", "want a frequency in Hz from 1/256 (0.00390625) to 8388607, like 0.16"},
		{"gain NaN", func() pflag.Value { return &Gain{} }, "NaN", "", "want a frequency in Hz from 1/256"},
		{"step packets", func() pflag.Value { return &Step{} }, "3pkts", "3p", ""},
		{"step zero packets", func() pflag.Value { return &Step{} }, "0p", "0p", ""},
		{"step time", func() pflag.Value { return &Step{} }, "1ms", "1ms", ""},
		// The kernel keeps step_thresh in a u32 of ns.
		{"step above u32 ns", func() pflag.Value { return &Step{} }, "5s", "", "want a duration like 1ms or a packet count like 3p (a duration at most 4.29s)"},
		{"choice alias", func() pflag.Value {
			return &Choice{Choices: []string{"drop", "overflow"}, Aliases: map[string]string{"drop_on_overload": "drop"}}
		}, "drop_on_overload", "drop", ""},
		{"choice other", func() pflag.Value { return &Choice{Choices: []string{"l4s", "any"}} }, "ect0", "", "want one of l4s, any"},
		{"choice more", func() pflag.Value {
			return &Choice{Choices: []string{"lte"}, More: func() []string { return []string{"office"} }}
		}, "office", "office", ""},
		{"choice neither", func() pflag.Value {
			return &Choice{Choices: []string{"lte"}, More: func() []string { return []string{"office"} }}
		}, "home", "", "want one of lte; or yours: office"},
		{"choice no more", func() pflag.Value { return &Choice{Choices: []string{"lte"}, More: func() []string { return nil }} }, "home", "", "want one of lte"},
		{"loss", func() pflag.Value { return &Loss{} }, "ge:p=1%,r=30%", "ge:p=1%,r=30%", ""},
		{"jitter", func() pflag.Value { return &Jitter{} }, "5ms", "5ms", ""},
		{"jitter dist", func() pflag.Value { return &Jitter{} }, "5ms,normal", "5ms,normal", ""},
		{"jitter negative", func() pflag.Value { return &Jitter{} }, "-5ms", "", "want AMOUNT[,DIST] like 5ms or 5ms,normal (DIST: uniform, normal, pareto, paretonormal)"},
		{"aggregate", func() pflag.Value { return &Aggregate{} }, "4ms,6kb", "4ms,6144b", ""},
		{"aggregate no size", func() pflag.Value { return &Aggregate{} }, "4ms", "", "want INTERVAL,SIZE like 4ms,6kb (a burst of up to SIZE every INTERVAL)"},
		{"aggregate size", func() pflag.Value { return &Aggregate{} }, "4ms,0", "", `size "0": want 1b..1gb in tc units (1500b, 64k)`},
	}
	for _, tt := range tests {
		v := tt.v()
		err := v.Set(tt.in)
		switch {
		case tt.err == "" && err != nil:
			t.Errorf("%s: Set(%q): %v", tt.name, tt.in, err)
		case tt.err == "" && v.String() != tt.print:
			t.Errorf("%s: Set(%q) prints as %q, want %q", tt.name, tt.in, v.String(), tt.print)
		case tt.err != "" && (err == nil || !strings.HasPrefix(err.Error(), tt.err)):
			t.Errorf("%s: Set(%q) = %v, want an error starting %q", tt.name, tt.in, err, tt.err)
		}
	}
}

// A bad value leaves the old one in place, so help keeps its default.
func TestSetFailureKeepsValue(t *testing.T) {
	v := &Count{N: 7, Min: 1, Max: 10}
	if err := v.Set("11"); err == nil || v.N != 7 {
		t.Errorf("Set(11): %v, N %d; want an error and N 7", err, v.N)
	}
}

// Unset optional values print "", so help shows no "(default ...)".
func TestUnsetPrintsEmpty(t *testing.T) {
	for name, v := range map[string]pflag.Value{"rate": &Rate{}, "size": &Size{}, "optional duration": &Duration{Optional: true},
		"jitter": &Jitter{}, "aggregate": &Aggregate{}, "loss": &Loss{}} {
		if v.String() != "" {
			t.Errorf("%s: unset prints %q", name, v.String())
		}
	}
	if s := (&Duration{}).String(); s != "0s" {
		t.Errorf("a zero non-optional duration prints %q, want 0s", s)
	}
}

func TestCPULatency(t *testing.T) {
	for _, tt := range []struct {
		in    string
		want  time.Duration
		print string
		bad   bool
	}{
		{in: "0", want: 0, print: "0s"},
		{in: "20us", want: 20 * time.Microsecond, print: "20µs"},
		{in: "off", want: -1, print: "off"},
		{in: "1s", want: time.Second, print: "1s"},
		{in: "2s", bad: true},
		{in: "-1ms", bad: true},
		{in: "5", bad: true},
		{in: "no", bad: true},
	} {
		var v CPULatency
		err := v.Set(tt.in)
		if tt.bad {
			if err == nil || err.Error() != `want "off" or a duration from 0 to 1s, like 0 or 20us` {
				t.Errorf("%q: error %v, want one naming the accepted forms", tt.in, err)
			}
			continue
		}
		if err != nil || v.D != tt.want || v.String() != tt.print {
			t.Errorf("%q: %v, %v printed %q; want %v printed %q", tt.in, err, v.D, v.String(), tt.want, tt.print)
		}
	}
}

// Type is the word help shows after the flag.
func TestType(t *testing.T) {
	for want, v := range map[string]pflag.Value{"rate": &Rate{}, "size": &Size{}, "duration": &Duration{}, "duration|off": &CPULatency{},
		"packets": &Count{}, "int": &IntRange{}, "Hz": &Gain{}, "duration|Np": &Step{}, "enqueue|dequeue": &Choice{Choices: []string{"enqueue", "dequeue"}},
		"loss": &Loss{}, "jitter": &Jitter{}, "interval,size": &Aggregate{}} {
		if v.Type() != want {
			t.Errorf("%T: Type %q, want %q", v, v.Type(), want)
		}
	}
}

// Bool, Text and Uint64 read, print and fail as pflag's own bool, string
// and uint64 flags.
func TestLikePflag(t *testing.T) {
	for _, tt := range []struct {
		ours   pflag.Value
		theirs func(fs *pflag.FlagSet)
		in     []string
	}{
		{&Bool{}, func(fs *pflag.FlagSet) { fs.Bool("x", false, "") }, []string{"true", "0", "T", "maybe", ""}},
		{&Text{}, func(fs *pflag.FlagSet) { fs.String("x", "", "") }, []string{"a", "", "0x01/0x01"}},
		{&Uint64{}, func(fs *pflag.FlagSet) { fs.Uint64("x", 0, "") }, []string{"9", "0x10", "-1", "x", "18446744073709551616"}},
	} {
		for _, in := range tt.in {
			fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
			tt.theirs(fs)
			theirs := fs.Lookup("x").Value
			errTheirs, errOurs := theirs.Set(in), tt.ours.Set(in)
			if fmt.Sprint(errTheirs) != fmt.Sprint(errOurs) || errOurs == nil && theirs.String() != tt.ours.String() ||
				theirs.Type() != tt.ours.Type() {
				t.Errorf("%T %q: %q %v %s, pflag %q %v %s", tt.ours, in, tt.ours.String(), errOurs, tt.ours.Type(), theirs.String(), errTheirs, theirs.Type())
			}
		}
	}
}
