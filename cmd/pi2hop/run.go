package main

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"net"
	"net/netip"
	"strings"

	"github.com/pi2hop/pi2hop/hop"
	"github.com/pi2hop/pi2hop/pcap"
	"github.com/pi2hop/pi2hop/tun"
	"github.com/spf13/pflag"
)

// pi2hop run: gateway mode. The bottleneck goes between two interfaces of
// this box. Policy rules by input interface send what arrives on the LAN
// interface into the uplink TUN and what arrives on the WAN interface into
// the downlink TUN; the hop writes each packet into the other TUN, where
// the kernel receives it and routes it by the main table as it would have
// without us. Rules sit after the local table (priority 0), so traffic to
// the box itself is untouched.
//
//	LAN ─► rule iif LAN ─► table T ─► NAME-up ─► hop (up) ─► NAME-dn ─► main ─► WAN
//	WAN ─► rule iif WAN ─► table T+1 ─► NAME-dn ─► hop (down) ─► NAME-up ─► main ─► LAN
//
// It enables forwarding and loosens rp_filter (a packet arrives from a TUN
// with a source routed elsewhere), and restores both on exit.

func init() {
	register(&command{
		name:  "run",
		short: "insert the bottleneck between two interfaces of this box (gateway mode)",
		usage: "run --lan IF --wan IF [flags]  |  run --cleanup [--name N]",
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
	fs.BoolVar(&a.cleanup, "cleanup", false, "remove what a crashed instance left (TUN devices, rules, routes, sysctls), then exit")
	a.inst = addInstanceFlags(fs)
	a.link = addLinkFlags(fs, true)
	a.capture = addCaptureFlags(fs)
	return func(ctx context.Context, env *cmdEnv, args []string) error {
		if len(args) > 0 {
			return usagef("run: unexpected argument %q", args[0])
		}
		if a.cleanup {
			if a.lan != "" || a.wan != "" {
				return usagef("run: --cleanup takes only --name")
			}
			return cleanupInstance(a.inst.name, env.stdout)
		}
		return runGateway(ctx, env, a, givenFlags(fs))
	}
}

// gatewayTables returns the routing tables and rule priority of instance
// name: fixed per name, so a cleanup finds them, and spread so that two
// instances do not collide.
func gatewayTables(name string) (up, down, prio int) {
	h := fnv.New32a()
	h.Write([]byte(name))
	n := int(h.Sum32() % 4096)
	return 0x7000 + 2*n, 0x7000 + 2*n + 1, 9000 + n
}

func runGateway(ctx context.Context, env *cmdEnv, a *runArgs, given []string) (err error) {
	switch {
	case a.lan == "" || a.wan == "":
		return usagef("run: give both --lan IF and --wan IF")
	case a.lan == a.wan:
		return usagef("run: --lan and --wan are both %q: want two interfaces", a.lan)
	}
	for _, ifname := range []string{a.lan, a.wan} {
		if _, err := net.InterfaceByName(ifname); err != nil {
			return fmt.Errorf("run: interface %q: %w", ifname, err)
		}
	}
	cfg, err := a.link.hopConfig(a.inst.name)
	if err != nil {
		return usagef("run: %v", err)
	}
	in, err := startInstance(a.inst, "run", given, env.stderr)
	if err != nil {
		return err
	}
	cfg.Logger = in.log
	cfg.CPULatency = a.inst.cpuLatency.d
	var h *hop.Hop
	var devs []tun.Device
	var capt *pcap.Capture
	defer func() {
		stop := func() error {
			var err error
			if h != nil {
				err = h.Close()
			} else {
				for _, d := range devs {
					d.Close()
				}
			}
			if capt != nil { // after the hop: its taps have stopped
				err = errors.Join(err, capt.Close())
			}
			return err
		}
		if cerr := in.close(stop); err == nil {
			err = cerr
		}
	}()

	j := in.journal
	upName, downName := a.inst.name+"-up", a.inst.name+"-dn"
	for _, n := range []string{upName, downName} {
		d, err := j.OpenTUN("", n, cfg.MTU)
		if err != nil {
			return err
		}
		devs = append(devs, d)
	}
	upTable, downTable, prio := gatewayTables(a.inst.name)
	for _, r := range []struct {
		iif, dev string
		table    int
	}{{a.lan, upName, upTable}, {a.wan, downName, downTable}} {
		for fam, dst := range map[int]string{4: "0.0.0.0/0", 6: "::/0"} {
			if err := j.AddRoute("", tun.Route{Dst: netip.MustParsePrefix(dst), Dev: r.dev, Table: r.table}); err != nil {
				return err
			}
			if err := j.AddRule("", tun.Rule{Family: fam, IIF: r.iif, Table: r.table, Priority: prio}); err != nil {
				return err
			}
		}
	}
	if err := gatewaySysctls(j, upName, downName); err != nil {
		return err
	}

	h, err = hop.New(cfg, devs[0], devs[1])
	if err != nil {
		return err
	}
	if capt, err = a.capture.open("pi2hop run "+strings.Join(given, " "), hop.UnixOffset()); err != nil {
		return err
	}
	if capt != nil {
		h.SetTap(pcap.NewHopTap(capt, ""))
	}
	if err := in.serve(ctx, h, a.inst.metrics); err != nil {
		return err
	}
	in.log.Info("pi2hop running: gateway",
		"lan", a.lan, "wan", a.wan, "tun_up", upName, "tun_down", downName,
		"up", describeDir(cfg.Up), "down", describeDir(cfg.Down),
		"tables", fmt.Sprintf("%d,%d", upTable, downTable), "rule_pref", prio,
		"control", socketPath(a.inst.name), "metrics", a.inst.metrics, "capture", a.capture.path, "state", statePath(a.inst.name),
		"cpu_latency", a.inst.cpuLatency.String())
	return h.Run(ctx)
}

// gatewaySysctls turns on forwarding and makes reverse-path filtering
// accept packets coming back from the TUNs: the effective rp_filter of an
// interface is the larger of "all" and its own, so strict (1) in "all"
// becomes loose (2), and the TUNs' own are 0.
func gatewaySysctls(j *tun.Journal, tuns ...string) error {
	set := []struct{ key, val string }{
		{"net/ipv4/ip_forward", "1"},
		{"net/ipv6/conf/all/forwarding", "1"},
	}
	for _, t := range tuns {
		set = append(set, struct{ key, val string }{"net/ipv4/conf/" + t + "/rp_filter", "0"})
	}
	if v, err := tun.ReadSysctl("", "net/ipv4/conf/all/rp_filter"); err == nil && v == "1" {
		set = append(set, struct{ key, val string }{"net/ipv4/conf/all/rp_filter", "2"})
	}
	for _, s := range set {
		if err := j.SetSysctl("", s.key, s.val); err != nil {
			return err
		}
	}
	return nil
}
