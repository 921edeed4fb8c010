package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/pi2hop/pi2hop/instance"
	"github.com/spf13/pflag"
)

// The link flags are the settings table's rows: every row on a command
// with both directions, the per-direction ones only there; a switch takes
// no value; a flag given lands in its setting.
func TestLinkFlagsAreTheTable(t *testing.T) {
	for _, bidir := range []bool{false, true} {
		fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
		fs.SetOutput(new(strings.Builder))
		lf := addLinkFlags(fs, bidir)
		n := 0
		fs.VisitAll(func(f *pflag.Flag) {
			if !f.Hidden {
				n++
			}
		})
		rows := 0
		for _, st := range instance.Table() {
			fl := fs.Lookup(st.FlagName())
			if st.Dir != "" && !bidir {
				if fl != nil {
					t.Errorf("--%s on a one-direction command", st.FlagName())
				}
				continue
			}
			rows++
			if fl == nil || fl.Usage != linkUsage(st, "") {
				t.Errorf("--%s: flag %v, want the table's usage", st.FlagName(), fl)
				continue
			}
			if fl.Value.Type() == "bool" {
				if err := fs.Parse([]string{"--" + fl.Name}); err != nil || !lf.settings().Has(st.Key) {
					t.Errorf("--%s alone: %v, settings %v", fl.Name, err, lf.settings().Given())
				}
			}
		}
		if n != rows {
			t.Errorf("bidir %v: %d flags for %d rows", bidir, n, rows)
		}
	}
}

// tc's keywords are hidden aliases that set what the flag they stand for
// sets: --coupling-factor 3 is --coupling 3, --overflow is --overload
// overflow, --noecn is --ecn=false; a switch alias takes no value.
func TestTCAliases(t *testing.T) {
	tests := []struct {
		args []string
		want []string // the same setting, spelled our way
	}{
		{[]string{"--coupling-factor", "3"}, []string{"--coupling", "3"}},
		{[]string{"--memory-limit", "64k"}, []string{"--memlimit", "64k"}},
		{[]string{"--drop-on-overload"}, []string{"--overload", "drop"}},
		{[]string{"--drop-overload"}, []string{"--overload", "drop"}},
		{[]string{"--overflow"}, []string{"--overload", "overflow"}},
		{[]string{"--drop-enqueue"}, []string{"--drop-at", "enqueue"}},
		{[]string{"--drop-dequeue"}, []string{"--drop-at", "dequeue"}},
		{[]string{"--l4s-ect"}, []string{"--ecn-mask", "l4s"}},
		{[]string{"--any-ect"}, []string{"--ecn-mask", "any"}},
		{[]string{"--aqm", "codel", "--noecn"}, []string{"--aqm", "codel", "--ecn=false"}},
		{[]string{"--aqm", "pie", "--nobytemode"}, []string{"--aqm", "pie", "--bytemode=false"}},
		{[]string{"--aqm", "pie", "--no-dq-rate-estimator"}, []string{"--aqm", "pie", "--dq-rate-estimator=false"}},
	}
	parse := func(args []string) (string, error) {
		fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
		fs.SetOutput(new(strings.Builder))
		lf := addLinkFlags(fs, true)
		if err := fs.Parse(args); err != nil {
			return "", err
		}
		b, err := json.Marshal(lf.settings())
		return string(b), err
	}
	for _, tt := range tests {
		got, err := parse(tt.args)
		want, werr := parse(tt.want)
		if err != nil || werr != nil || got != want {
			t.Errorf("%v gives %s (%v), want %s as %v gives (%v)", tt.args, got, err, want, tt.want, werr)
		}
	}
	if _, err := parse([]string{"--overflow=drop"}); err == nil {
		t.Errorf("--overflow=drop accepted: a switch alias takes no value")
	}
}
