package main

import (
	"context"
	"os"
	"strings"

	"github.com/pi2hop/pi2hop/hop/instance"
	"github.com/spf13/pflag"
)

// pi2hop shell: run a command in a fresh network namespace behind the
// bottleneck, like mahimahi's shells in one step (see instance.Shell). The
// command's exit status is pi2hop's.

func init() {
	register(&command{
		name:  "shell",
		short: "run a command in a network namespace behind the bottleneck",
		usage: "shell [flags] [-- CMD ARGS...]  (default CMD: $SHELL)",
		flags: shellFlags,
	})
}

type shellArgs struct {
	nat     bool
	inst    *instanceFlags
	link    *linkFlags
	capture *captureFlags
}

func shellFlags(fs *pflag.FlagSet) func(context.Context, *cmdEnv, []string) error {
	a := &shellArgs{}
	fs.BoolVar(&a.nat, "nat", false, "give the namespace the host's onward connectivity (forwarding + nftables masquerade; needs nft)")
	a.inst = addInstanceFlags(fs)
	a.link = addLinkFlags(fs, true)
	a.capture = addCaptureFlags(fs)
	return func(ctx context.Context, env *cmdEnv, args []string) error {
		if len(args) == 0 {
			sh := os.Getenv("SHELL")
			if sh == "" {
				sh = "/bin/sh"
			}
			args = []string{sh}
		}
		return runInstance(ctx, env, "shell", a.inst, a.link, a.capture, "pi2hop shell "+strings.Join(givenFlags(fs), " "),
			&instance.Shell{Args: args, NAT: a.nat, Stdin: env.stdin, Stdout: env.stdout, Stderr: env.stderr})
	}
}
