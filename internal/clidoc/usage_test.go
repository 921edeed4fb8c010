package clidoc

import (
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

// Placeholders are what a user types, never a Go type name; flags list
// under their headings in the order given, the ungrouped first; a zero
// default or one marked away is not shown.
func TestUsages(t *testing.T) {
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	fs.SortFlags = false
	fs.Duration("every", time.Second, "print once per period")
	fs.Int("n", 0, "how many")
	fs.StringSlice("windows", nil, "receive windows")
	fs.String("capture", "", "write to `FILE`")
	fs.Bool("json", false, "print JSON")
	fs.Float64("k", 2, "coupling")
	fs.String("name", "pi2hop", "instance `name`")
	fs.Uint64("seed", 1, "seed")
	Annotate(fs, "capture", GroupAnnotation, "capture")
	Annotate(fs, "json", GroupAnnotation, "output")
	Annotate(fs, "every", GroupAnnotation, "output")
	Annotate(fs, "name", GroupAnnotation, "instance")
	Annotate(fs, "seed", NoDefaultAnnotation, "")
	Annotate(fs, "windows", ArgAnnotation, "SIZE,...")
	got := Usages(fs, []string{"capture", "output", "instance"}, func(g string) string {
		if g == "" {
			return "Flags"
		}
		return g
	})
	want := `Flags:
      --n N                    how many
      --windows SIZE,...       receive windows
      --k NUMBER               coupling (default 2)
      --seed N                 seed

capture:
      --capture FILE           write to FILE

output:
      --every TIME             print once per period (default 1s)
      --json                   print JSON

instance:
      --name NAME              instance name (default pi2hop)
`
	if got != want {
		t.Errorf("Usages:\n%s\nwant\n%s", got, want)
	}
	for _, name := range []string{"every", "n", "k", "seed"} {
		for _, typ := range GoTypeNames {
			if Placeholder(fs.Lookup(name)) == typ {
				t.Errorf("--%s shows Go type %q", name, typ)
			}
		}
	}
	if !strings.Contains(got, "--json                   print JSON\n") {
		t.Errorf("a switch shows a value or a default")
	}
}
