package main

import (
	"context"
	"fmt"

	"github.com/pi2hop/pi2hop/internal/buildinfo"
	"github.com/spf13/pflag"
)

var versionCmd = &command{
	name:  "version",
	short: "print pi2hop's version, the commit it was built from and the Go toolchain",
	usage: "version",
	examples: []example{
		{"pi2hop version", "version, commit, module, Go version and platform"},
		{"pi2hop --version", "the same"},
	},
	flags: func(fs *pflag.FlagSet) func(context.Context, *cmdEnv, []string) error {
		return func(_ context.Context, env *cmdEnv, args []string) error {
			if len(args) > 0 {
				return usagef("version: unexpected argument %q", args[0])
			}
			fmt.Fprint(env.stdout, buildinfo.Read().Describe())
			return nil
		}
	},
}
