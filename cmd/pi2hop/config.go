package main

import (
	"context"

	"github.com/pi2hop/pi2hop/instance"
	"github.com/spf13/pflag"
)

// pi2hop config dump: a running hop's settings as --config reads them.
var configCmd = &command{
	name: "config", short: "write a running hop's settings as a file run, shell and share read back", usage: "config SUBCOMMAND [flags]",
	examples: configExamples,
	subs: []*command{{
		name: "dump", usage: "dump [--name N] [--all]", linux: "a local instance started by run, shell or share", examples: configExamples,
		short: "print the settings a running hop was given (flags, profile, configuration file, set since) as TOML; --all: every setting in force",
		long:  "The output is a configuration file: run, shell and share read it back (their config flag), and flags given beside it win. Without --all it holds the settings given, the rest being at their defaults; with --all it also holds every other setting at the value in force (but not the per-direction ones, the values auto-tuning sets, or DualPI2's memlimit, which follows limit). The command's own flags (name, web, metrics, capture) are not in it: add them by hand.",
		flags: func(fs *pflag.FlagSet) func(context.Context, *cmdEnv, []string) error {
			name, all := "", false
			fs.StringVar(&name, "name", "", pickNameUsage)
			fs.BoolVar(&all, "all", false, "write every setting in force, defaults too")
			return func(_ context.Context, env *cmdEnv, args []string) error {
				if len(args) > 0 {
					return usagef("config dump: unexpected argument %q", args[0])
				}
				b, err := instance.DumpConfig(name, all)
				if err == nil {
					_, err = env.stdout.Write(b)
				}
				return err
			}
		},
	}},
}

var configExamples = []example{
	{"sudo pi2hop config dump --name lab1 > lab1.toml", "keep instance lab1's settings: sudo pi2hop shell --config lab1.toml starts another shell with them"},
	{"sudo pi2hop config dump --all", "every setting the only running instance has in force, defaults too"},
}
