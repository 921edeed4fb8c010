package main

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"time"

	"github.com/pi2hop/pi2hop/instance"
	"github.com/pi2hop/pi2hop/internal/cli"
	"github.com/pi2hop/pi2hop/internal/flagvalue"
	"github.com/pi2hop/pi2hop/internal/privs"
	"github.com/pi2hop/pi2hop/netsys"
	"github.com/spf13/pflag"
)

// pi2hop run: gateway mode. The bottleneck goes between two interfaces of
// this box, by policy routing (see topology.Gateway).

var runCmd = &command{
	name:  "run",
	short: "insert the bottleneck between two interfaces of this box (gateway mode)",
	usage: "run --lan IF --wan IF [flags]  |  run --cleanup [--name N] [--lan IF --wan IF]",
	examples: []example{
		{"sudo pi2hop run --lan eth1 --wan eth0 --rate 10mbit", "shape the traffic this router already forwards between eth1 and eth0"},
		{"sudo pi2hop run --lan eth1 --wan eth0 --aqm fq_codel --capture hop.pcapng", "compare with fq_codel and capture every decision"},
		{"sudo pi2hop run --cleanup --lan eth1 --wan eth0", "remove what a killed run left"},
	},
	flags: runFlags,
	linux: "TUN devices, netlink, policy routing",
}

type runArgs struct {
	lan, wan   string
	cleanup    bool
	accept     bool
	waitIfaces flagvalue.Duration
	inst       *instanceFlags
	link       *linkFlags
	capture    *captureFlags
}

func runFlags(fs *pflag.FlagSet) func(context.Context, *cmdEnv, []string) error {
	a := &runArgs{}
	fs.StringVar(&a.lan, "lan", "", "`interface` facing the clients (their traffic goes up through the bottleneck), by name or by a prefix it holds an address in (10.77.1.0/24: Docker attaches a container's networks in no fixed order)")
	fs.StringVar(&a.wan, "wan", "", "`interface` facing the network (its traffic comes down through the bottleneck), by name or by a prefix it holds an address in")
	a.waitIfaces = flagvalue.Duration{Optional: true}
	fs.Var(&a.waitIfaces, "wait-interfaces", "wait up to `duration` for --lan and --wan to appear (a container whose interfaces are attached after it starts, as containerlab and Multus do); none by then: exit 2 naming it")
	fs.BoolVar(&a.cleanup, "cleanup", false, cleanupUsage+"; with --lan and --wan it also sweeps the gateway's rules on them when the state file is lost")
	firewallAcceptFlag(fs, &a.accept)
	a.inst = addInstanceFlags(fs)
	a.link = addLinkFlags(fs, true)
	a.link.addProfileFlag()
	a.capture = addCaptureFlags(fs)
	return func(ctx context.Context, env *cmdEnv, args []string) error {
		for _, f := range []struct {
			flag string
			p    *string
		}{{"lan", &a.lan}, {"wan", &a.wan}} {
			if err := ifaceByPrefix(ctx, "run", f.flag, f.p, a.waitIfaces.D); err != nil {
				return err
			}
		}
		if done, err := gatewayArgs("run", args, a.lan, a.wan, a.cleanup, a.inst, env); done {
			return err
		}
		if err := needPrivs("run", "make TUN devices, routes and rules", privs.NetAdmin); err != nil {
			return err
		}
		if a.waitIfaces.D > 0 {
			var me *netsys.MissingLinkError
			if err := netsys.WaitLinks(ctx, []string{a.lan, a.wan}, a.waitIfaces.D); errors.As(err, &me) {
				return &cli.PlatformError{Msg: fmt.Sprintf("pi2hop run: --wait-interfaces %v: %v", a.waitIfaces.D, me)}
			} else if err != nil {
				return err
			}
		}
		return runInstance(ctx, env, "run", a.inst, a.link, a.capture, "pi2hop run "+strings.Join(givenFlags(fs), " "),
			&instance.Gateway{LAN: a.lan, WAN: a.wan, FirewallAccept: a.accept})
	}
}

// ifaceByPrefix replaces an interface flag's prefix (or address) with the
// name of the interface that holds an address in it, waiting up to wait
// for one; a name is left as it is.
func ifaceByPrefix(ctx context.Context, command, flag string, v *string, wait time.Duration) error {
	p, err := netip.ParsePrefix(*v)
	if err != nil {
		a, aerr := netip.ParseAddr(*v)
		if aerr != nil {
			return nil
		}
		p = netip.PrefixFrom(a, a.BitLen())
	}
	name, err := netsys.LinkIn(ctx, p, wait)
	var me *netsys.MissingLinkError
	switch {
	case errors.As(err, &me):
		return &cli.PlatformError{Msg: fmt.Sprintf("pi2hop %s: --%s %s: %v", command, flag, *v, me)}
	case errors.Is(err, netsys.ErrUnsupported):
		return err
	case err != nil:
		return usagef("%s: --%s %s: %v", command, flag, *v, err)
	}
	*v = name
	return nil
}

// firewallAcceptFlag declares --firewall-accept, which run and share share.
func firewallAcceptFlag(fs *pflag.FlagSet, p *bool) {
	fs.BoolVar(p, "firewall-accept", true, "when a firewall's forward chain drops by policy (Docker's, ufw's), add accept rules for this instance's interfaces there (Docker's DOCKER-USER chain, else that chain) until exit; --firewall-accept=false leaves the firewall alone")
}

// gatewayArgs checks the --lan/--wan pair run and share take and carries
// out --cleanup; done says the command has nothing more to do.
func gatewayArgs(command string, args []string, lanIf, wanIf string, cleanup bool, inst *instanceFlags, env *cmdEnv) (done bool, err error) {
	switch {
	case len(args) > 0:
		return true, usagef("%s: unexpected argument %q", command, args[0])
	case cleanup:
		var ifaces []string
		for _, i := range []string{lanIf, wanIf} {
			if i != "" {
				ifaces = append(ifaces, i)
			}
		}
		return true, cleanupAs(command, inst.name, ifaces, env.stdout)
	case lanIf == "" || wanIf == "":
		return true, usagef("%s: give both --lan IF and --wan IF", command)
	case lanIf == wanIf:
		return true, usagef("%s: --lan and --wan are both %q: want two interfaces", command, lanIf)
	}
	return false, nil
}
