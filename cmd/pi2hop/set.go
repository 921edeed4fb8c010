package main

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/pi2hop/pi2hop/instance"
	"github.com/spf13/pflag"
)

// pi2hop set: change a running instance's link and AQM parameters. Only
// the flags given change: they travel as a typed edit (instance.Settings),
// which the instance merges over the settings it runs with, validates as
// a whole and applies to both directions at once, or not at all.

var setCmd = &command{
	name:  "set",
	short: "change a running hop's rate, delay, loss or DualPI2 parameters live",
	usage: "set [--name N] LINK-FLAGS (e.g. --down-rate 5mbit --delay 30ms)",
	examples: []example{
		{"pi2hop set --rate 2mbit", "throttle both directions to 2 Mbit/s"},
		{"pi2hop set --down-delay 40ms --up-loss 1", "more delay down, 1 % loss up"},
		{"pi2hop set --rate unlimited", "unthrottle a share (sized for it); run and shell stay within the rate and delay they started with"},
	},
	flags: setFlags,
	linux: "a local instance started by run, shell or share",
}

func setFlags(fs *pflag.FlagSet) func(context.Context, *cmdEnv, []string) error {
	var name string
	fs.StringVar(&name, "name", "", pickNameUsage)
	lf := addLiveLinkFlags(fs)
	return func(ctx context.Context, env *cmdEnv, args []string) error {
		if len(args) > 0 {
			return usagef("set: unexpected argument %q", args[0])
		}
		s := lf.settings()
		given := s.Given()
		if len(given) == 0 {
			return usagef("set: name at least one link flag to change, e.g. --rate 5mbit")
		}
		for _, k := range given {
			if st, _ := instance.Lookup(k); st.Fixed {
				return usagef("set: --%s cannot change while the hop runs: restart it", st.FlagName())
			}
		}
		asked := name
		name, err := pickInstance(name)
		if err != nil {
			return fmt.Errorf("set: %w", err)
		}
		warnings, err := instance.Set(name, s)
		for _, w := range warnings {
			fmt.Fprintf(env.stderr, "pi2hop: warning: %s\n", w)
		}
		var re *instance.RemoteError
		if errors.As(err, &re) && re.Field != "" {
			return fmt.Errorf("set: --%s: %s", instance.FlagOf(re.Field), re.Msg)
		}
		if err != nil {
			return fmt.Errorf("set: %w", err)
		}
		fmt.Fprintf(env.stdout, "%s: set %v\n", name, slices.DeleteFunc(givenFlags(fs), func(f string) bool { return f == "--name="+asked }))
		return nil
	}
}
