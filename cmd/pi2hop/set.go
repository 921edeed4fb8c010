package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"
)

// pi2hop set: change a running instance's link and AQM parameters. Only
// the flags given change; the instance merges them over the flags it was
// started with, validates the result as a whole and applies it to both
// directions at once, or not at all.

func init() {
	register(&command{
		name:  "set",
		short: "change a running hop's rate, delay, loss or DualPI2 parameters live",
		usage: "set [--name N] LINK-FLAGS (e.g. --down-rate 5mbit --delay 30ms)",
		flags: setFlags,
	})
}

func setFlags(fs *pflag.FlagSet) func(context.Context, *cmdEnv, []string) error {
	var name string
	fs.StringVar(&name, "name", defaultInstance, "instance `name` (as given to run or shell)")
	lf := addLinkFlags(fs, true)
	return func(ctx context.Context, env *cmdEnv, args []string) error {
		if len(args) > 0 {
			return usagef("set: unexpected argument %q", args[0])
		}
		var given []string
		fs.Visit(func(f *pflag.Flag) {
			if f.Name != "name" {
				// The values print in the units they parse from (tc rates,
				// Go durations), so the instance re-parses the same setting.
				v := f.Value.String()
				if strings.HasSuffix(f.Name, "rate-trace") {
					// The instance reads the file from its own directory.
					if abs, err := filepath.Abs(v); err == nil {
						v = abs
					}
				}
				given = append(given, fmt.Sprintf("--%s=%s", f.Name, v))
			}
		})
		if len(given) == 0 {
			return usagef("set: name at least one link flag to change, e.g. --rate 5mbit")
		}
		for _, n := range liveFixed {
			if lf.given(n) {
				return usagef("set: --%s cannot change while the hop runs: restart it", n)
			}
		}
		if _, err := controlCall(name, controlRequest{Op: "set", Args: given}); err != nil {
			return fmt.Errorf("set: %w", err)
		}
		fmt.Fprintf(env.stdout, "%s: set %v\n", name, given)
		return nil
	}
}
