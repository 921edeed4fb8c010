package main

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/pflag"
)

func init() {
	register(&command{
		name:  "version",
		short: "print pi2hop's version and the Go toolchain it was built with",
		usage: "version",
		flags: func(fs *pflag.FlagSet) func(context.Context, *cmdEnv, []string) error {
			return func(_ context.Context, env *cmdEnv, args []string) error {
				if len(args) > 0 {
					return usagef("version: unexpected argument %q", args[0])
				}
				info, _ := debug.ReadBuildInfo()
				fmt.Fprint(env.stdout, versionText(info))
				return nil
			}
		},
	})
}

// versionText describes the build: module version ("(devel)" for a build
// from a work tree), the VCS revision when the build recorded one, and
// the Go version and platform.
func versionText(info *debug.BuildInfo) string {
	mod, version := "github.com/pi2hop/pi2hop", "(unknown)"
	var revision, modified string
	if info != nil {
		if info.Main.Path != "" {
			mod = info.Main.Path
		}
		if info.Main.Version != "" {
			version = info.Main.Version
		}
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				revision = s.Value
			case "vcs.modified":
				if s.Value == "true" {
					modified = " (modified)"
				}
			}
		}
	}
	s := fmt.Sprintf("pi2hop %s\nmodule %s\n", version, mod)
	if revision != "" {
		s += fmt.Sprintf("revision %s%s\n", revision, modified)
	}
	return s + fmt.Sprintf("go %s %s/%s\n", runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
