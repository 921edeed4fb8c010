package main

import (
	"context"
	"fmt"

	"github.com/pi2hop/pi2hop/internal/buildinfo"
	"github.com/spf13/pflag"
)

var versionCmd = &command{
	name:  "version",
	short: "print pi2hop's version and the Go toolchain it was built with",
	usage: "version",
	flags: func(fs *pflag.FlagSet) func(context.Context, *cmdEnv, []string) error {
		return func(_ context.Context, env *cmdEnv, args []string) error {
			if len(args) > 0 {
				return usagef("version: unexpected argument %q", args[0])
			}
			fmt.Fprint(env.stdout, versionText(buildinfo.Read()))
			return nil
		}
	},
}

// versionText describes the build: its version as buildinfo spells it
// (the lab report's spelling too), the module, the Go version and platform.
func versionText(info buildinfo.Info) string {
	return fmt.Sprintf("pi2hop %s\nmodule %s\ngo %s %s\n", info, info.Module, info.Go, info.Platform)
}
