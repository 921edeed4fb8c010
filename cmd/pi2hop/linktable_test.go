package main

import (
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
		fs.VisitAll(func(*pflag.Flag) { n++ })
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
			if fl == nil || fl.Usage != st.Usage {
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
