package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/pi2hop/pi2hop/instance"
	"github.com/pi2hop/pi2hop/internal/privs"
	"github.com/pi2hop/pi2hop/invoker"
	"github.com/spf13/pflag"
)

// pi2hop shell: run a command in a fresh network namespace behind the
// bottleneck, like mahimahi's shells in one step (see instance.Shell). The
// command's exit status is pi2hop's.

var shellCmd = &command{
	name:  "shell",
	short: "run a command in a network namespace behind the bottleneck",
	long:  instance.ShellHelp(),
	usage: "shell [flags] [-- CMD ARGS...]  (default CMD: the user's shell)  |  shell --cleanup [--name N]",
	examples: []example{
		{"sudo pi2hop shell --rate 10mbit --delay 10ms", "a shell behind a 10 Mbit/s link with 20 ms of round trip"},
		{"sudo pi2hop shell --rate 10mbit --delay 20ms -- sh -c 'ping -c 5 -Q 1 $PI2HOP_HOST'", "ping this host through the hop with ECT(1) (quoted: the variable is set inside, not in your shell)"},
		{"sudo pi2hop shell --rate 5mbit --loss 1 --nat -- curl -O https://example.com/big", "one command, 1 % loss, with Internet access"},
	},
	flags:    shellFlags,
	argFiles: true,
	linux:    "TUN devices, network namespaces",
}

type shellArgs struct {
	nat     bool
	cleanup bool
	asRoot  bool
	user    string
	inst    *instanceFlags
	link    *linkFlags
	capture *captureFlags
}

func shellFlags(fs *pflag.FlagSet) func(context.Context, *cmdEnv, []string) error {
	a := &shellArgs{}
	fs.BoolVar(&a.nat, "nat", false, "give the namespace the host's onward connectivity (forwarding + an nftables masquerade, made over netlink)")
	fs.BoolVar(&a.cleanup, "cleanup", false, cleanupUsage)
	fs.StringVar(&a.user, "user", "", "run the command as `user` (name or uid; default: the user behind sudo, from SUDO_UID and SUDO_GID)")
	fs.BoolVar(&a.asRoot, "as-root", false, "run the command as root with pi2hop's environment: it can then leave the namespace and re-shape its own link")
	a.inst = addInstanceFlags(fs)
	a.link = addLinkFlags(fs, true)
	a.link.addProfileFlag()
	a.capture = addCaptureFlags(fs)
	return func(ctx context.Context, env *cmdEnv, args []string) error {
		switch {
		case a.cleanup && len(args) > 0:
			return usagef("shell: --cleanup takes no command")
		case a.cleanup:
			return cleanupAs("shell", a.inst.name, nil, env.stdout)
		case a.asRoot && a.user != "":
			return usagef("shell: --as-root and --user %s: give one", a.user)
		}
		if err := needPrivs("shell", "create network namespaces", privs.NetAdmin, privs.SysAdmin); err != nil {
			return err
		}
		u, err := shellUser(a.user, a.asRoot)
		if err != nil {
			return err
		}
		if len(args) == 0 {
			sh := os.Getenv("SHELL")
			if u != nil {
				sh = u.Shell
			}
			if sh == "" {
				sh = "/bin/sh"
			}
			args = []string{sh}
		}
		return runInstance(ctx, env, "shell", a.inst, a.link, a.capture, "pi2hop shell "+strings.Join(givenFlags(fs), " "),
			&instance.Shell{Args: args, User: u, NAT: a.nat, Stdin: env.stdin, Stdout: env.stdout, Stderr: env.stderr})
	}
}

// shellUser is who the command runs as: --user, else the user behind
// sudo (root itself when there is none); nil for --as-root.
func shellUser(name string, asRoot bool) (*invoker.User, error) {
	if asRoot {
		return nil, nil
	}
	var u invoker.User
	var err error
	if name != "" {
		if u, err = invoker.Lookup(name); err != nil {
			return nil, usagef("shell: --user: %v", err)
		}
	} else if u, err = invoker.FromEnv(); err != nil {
		return nil, fmt.Errorf("shell: the invoking user: %w (give --user NAME or --as-root)", err)
	}
	return &u, nil
}
