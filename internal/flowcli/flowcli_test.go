package flowcli

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/pi2hop/pi2hop/internal/cli"
	"github.com/spf13/pflag"
)

func command(t *testing.T, name string) *Command {
	t.Helper()
	for _, c := range Commands {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no subcommand %q", name)
	return nil
}

// Mistakes in the command line are usage errors naming the flag, caught
// before any socket opens; other errors name the subcommand.
func TestUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		args  []string
		usage bool
		want  string
	}{
		{"prague-send", []string{"--ecn", "l5s", "--to", "127.0.0.1:9"}, true, "--ecn"},
		{"prague-recv", []string{"--listen", ":0", "extra"}, true, `flow prague-recv: unexpected argument "extra"`},
		{"video-send", []string{"--min-rate", "2mbit", "--max-rate", "1mbit", "--to", "127.0.0.1:9"}, true, "--max-rate 1mbit is below --min-rate 2mbit"},
		{"bulk", nil, true, "give exactly one of --listen (server) and --to (client)"},
		{"probe", []string{"--listen", ":0", "--to", "127.0.0.1:9"}, true, "give exactly one of --listen"},
		{"probe", []string{"--to", "127.0.0.1:9", "--ecn", "ect2"}, true, "--ecn"},
		{"bulk", []string{"--listen", "127.0.0.1:notaport"}, false, "bulk: "},
	} {
		t.Run(tc.name+" "+strings.Join(tc.args, " "), func(t *testing.T) {
			fs := pflag.NewFlagSet(tc.name, pflag.ContinueOnError)
			run := command(t, tc.name).Declare(fs)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			err := run(context.Background(), Env{Stdout: io.Discard, Stderr: io.Discard}, fs.Args())
			var ue *cli.UsageError
			if err == nil || errors.As(err, &ue) != tc.usage || !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("error %v (usage error %v), want one starting %q (usage error %v)", err, ue != nil, tc.want, tc.usage)
			}
		})
	}
}

// Each subcommand declares --duration, --json, --label and one of
// --every or the ignored --interval, so scripts may pass them to any.
func TestOutputFlags(t *testing.T) {
	for _, c := range Commands {
		fs := pflag.NewFlagSet(c.Name, pflag.ContinueOnError)
		c.Declare(fs)
		for _, name := range []string{"duration", "json", "label", "interval"} {
			if fs.Lookup(name) == nil {
				t.Errorf("%s has no --%s", c.Name, name)
			}
		}
	}
}
