package main

import (
	"context"
	"strings"

	"github.com/pi2hop/pi2hop/hop/instance"
	"github.com/spf13/pflag"
)

// pi2hop run: gateway mode. The bottleneck goes between two interfaces of
// this box, by policy routing (see hop.Gateway).

func init() {
	register(&command{
		name:  "run",
		short: "insert the bottleneck between two interfaces of this box (gateway mode)",
		usage: "run --lan IF --wan IF [flags]  |  run --cleanup [--name N] [--lan IF --wan IF]",
		flags: runFlags,
	})
}

type runArgs struct {
	lan, wan string
	cleanup  bool
	inst     *instanceFlags
	link     *linkFlags
	capture  *captureFlags
}

func runFlags(fs *pflag.FlagSet) func(context.Context, *cmdEnv, []string) error {
	a := &runArgs{}
	fs.StringVar(&a.lan, "lan", "", "`interface` facing the clients (their traffic goes up through the bottleneck)")
	fs.StringVar(&a.wan, "wan", "", "`interface` facing the network (its traffic comes down through the bottleneck)")
	fs.BoolVar(&a.cleanup, "cleanup", false, cleanupUsage+"; with --lan and --wan it also sweeps the gateway's rules on them when the state file is lost")
	a.inst = addInstanceFlags(fs)
	a.link = addLinkFlags(fs, true)
	a.capture = addCaptureFlags(fs)
	return func(ctx context.Context, env *cmdEnv, args []string) error {
		switch {
		case len(args) > 0:
			return usagef("run: unexpected argument %q", args[0])
		case a.cleanup:
			var ifaces []string
			for _, i := range []string{a.lan, a.wan} {
				if i != "" {
					ifaces = append(ifaces, i)
				}
			}
			return cleanupInstance(a.inst.name, ifaces, env.stdout)
		case a.lan == "" || a.wan == "":
			return usagef("run: give both --lan IF and --wan IF")
		case a.lan == a.wan:
			return usagef("run: --lan and --wan are both %q: want two interfaces", a.lan)
		}
		return runInstance(ctx, env, "run", a.inst, a.link, a.capture, "pi2hop run "+strings.Join(givenFlags(fs), " "),
			&instance.Gateway{LAN: a.lan, WAN: a.wan})
	}
}
