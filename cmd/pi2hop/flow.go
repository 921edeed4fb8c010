package main

import (
	"context"

	"github.com/spf13/pflag"

	"github.com/pi2hop/pi2hop/internal/flowcli"
)

var flowCmd = &command{
	name:  "flow",
	short: "traffic endpoints: Prague (L4S or classic), a video call, bulk TCP, an ECN round-trip probe",
	usage: "flow SUBCOMMAND [flags]",
	examples: []example{
		{"pi2hop flow prague-recv --listen :5000", "an L4S receiver"},
		{"pi2hop flow prague-send --to 10.254.1.1:5000 --duration 10s", "an L4S flow to it for 10 s"},
	},
	long: "Each works across real networks too, not only in pi2hop lab.",
	subs: flowSubs(),
}

// flowSubs makes a command of each of flowcli's subcommands (their usage
// errors are package cli's, as the program's own).
func flowSubs() []*command {
	var subs []*command
	for _, s := range flowcli.Commands {
		c := &command{name: s.Name, usage: s.Name + " " + s.Synopsis, short: s.Short}
		for _, e := range s.Examples {
			c.examples = append(c.examples, example{e.Line, e.What})
		}
		c.flags = func(fs *pflag.FlagSet) func(context.Context, *cmdEnv, []string) error {
			run := s.Declare(fs)
			return func(ctx context.Context, env *cmdEnv, args []string) error {
				return run(ctx, flowcli.Env{Stdout: env.stdout, Stderr: env.stderr}, args)
			}
		}
		subs = append(subs, c)
	}
	return subs
}
