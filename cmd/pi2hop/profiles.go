package main

import (
	"context"
	"fmt"

	"github.com/pi2hop/pi2hop/instance"
	"github.com/pi2hop/pi2hop/instance/profile"
	"github.com/pi2hop/pi2hop/internal/clidoc"
	"github.com/spf13/pflag"
)

// pi2hop profiles: the presets --profile takes, from instance.Profiles.

var profilesCmd = &command{
	name:  "profiles",
	short: "list the preset access links that replay, run, shell and share take by name, with their settings and sources, then your own",
	usage: "profiles [--json]",
	examples: []example{
		{"pi2hop profiles", "each profile's flags, its traces' mean rates and the sources of its figures"},
		{"pi2hop profiles --json", "the same for a program, with each profile's flags as command-line arguments"},
	},
	long: "Each profile is a set of link flags. A flag given beside the profile's name overrides the profile's value, " +
		"and a flag for both directions also overrides the profile's per-direction values of the same setting. " +
		"Profiles of your own are files in ~/" + profile.UserDir + " (see docs/profiles.md), listed after the presets.",
	flags: func(fs *pflag.FlagSet) func(context.Context, *cmdEnv, []string) error {
		var asJSON bool
		clidoc.JSONFlag(fs, &asJSON, "print JSON: {\"profiles\": [...]}, each with its flags, sources and rate traces")
		return func(_ context.Context, env *cmdEnv, args []string) error {
			if len(args) > 0 {
				return usagef("profiles: unexpected argument %q", args[0])
			}
			ps := instance.Profiles()
			if asJSON {
				b, err := instance.ProfilesJSON(ps)
				if err != nil {
					return err
				}
				fmt.Fprintf(env.stdout, "%s\n", b)
				return nil
			}
			instance.WriteProfiles(env.stdout, ps)
			return nil
		}
	},
}
