package main

import (
	"context"
	"fmt"
	"io"
	"net/netip"
	"strings"
	"time"

	"github.com/pi2hop/pi2hop/instance"
	"github.com/pi2hop/pi2hop/internal/flagvalue"
	"github.com/pi2hop/pi2hop/lan"
	"github.com/spf13/pflag"
)

// pi2hop share: this box becomes the Internet Sharing hop of a LAN, as a
// Mac does for the WWDC23 L4S demo: addresses, DHCP, DNS, router
// advertisements and NAT, with the bottleneck between LAN and WAN (see
// instance.Share).

var shareCmd = &command{
	name:  "share",
	short: "share this box's connection with a LAN (DHCP, DNS, NAT) behind the bottleneck, as a Mac's Internet Sharing",
	usage: "share --lan IF --wan IF [flags]  |  share --cleanup [--name N]",
	examples: []example{
		{"sudo pi2hop share --lan eth1 --wan eth0 --rate 10mbit", "share eth0's connection on eth1 through a 10 Mbit/s DualPI2 bottleneck"},
		{"sudo pi2hop share --lan wlan0 --wan eth0 --down-rate 20mbit --up-rate 5mbit --delay 10ms", "an asymmetric access link with 20 ms of round trip"},
		{"sudo pi2hop share --cleanup", "remove what a killed share left"},
	},
	flags: shareFlags,
	linux: "TUN devices, netlink, nftables",
}

type shareArgs struct {
	lan, wan  string
	subnet    string
	noIPv6    bool
	dns       []string
	leaseTime flagvalue.Duration
	cleanup   bool
	accept    bool
	inst      *instanceFlags
	link      *linkFlags
	capture   *captureFlags
}

func shareFlags(fs *pflag.FlagSet) func(context.Context, *cmdEnv, []string) error {
	a := &shareArgs{leaseTime: flagvalue.Duration{D: lan.DefaultLeaseTime, Min: 10 * time.Second}}
	fs.StringVar(&a.lan, "lan", "", "`interface` of the shared LAN: Ethernet, a USB adapter, a bridge, or a Wi-Fi access point run by hostapd")
	fs.StringVar(&a.wan, "wan", "", "`interface` towards the Internet")
	fs.StringVar(&a.subnet, "subnet", "", "the LAN's IPv4 `prefix` (default: a free /24, 192.168.2.0/24 first, as a Mac uses); the box takes its first address")
	fs.BoolVar(&a.noIPv6, "no-ipv6", false, "no IPv6 on the LAN (no ULA prefix, router advertisements or NAT66); without it IPv6 is shared when the WAN has it")
	fs.StringArrayVar(&a.dns, "dns", nil, "upstream DNS server `ADDR` (host or host:port; repeat for more); default the box's /etc/resolv.conf")
	fs.Var(&a.leaseTime, "lease-time", "DHCP lease `duration`")
	fs.BoolVar(&a.cleanup, "cleanup", false, cleanupUsage+"; with --lan and --wan it also sweeps the gateway's rules on them when the state file is lost")
	firewallAcceptFlag(fs, &a.accept)
	a.inst = addInstanceFlags(fs)
	a.link = addLinkFlags(fs, true)
	a.link.addProfileFlag()
	a.capture = addCaptureFlags(fs)
	return func(ctx context.Context, env *cmdEnv, args []string) error {
		if done, err := gatewayArgs("share", args, a.lan, a.wan, a.cleanup, a.inst, env); done {
			return err
		}
		topo := &instance.Share{LAN: a.lan, WAN: a.wan, NoIPv6: a.noIPv6, LeaseTime: a.leaseTime.D, FirewallAccept: a.accept}
		if a.subnet != "" {
			p, err := netip.ParsePrefix(a.subnet)
			if err != nil || !p.Addr().Is4() {
				return usagef("share: --subnet %q: want an IPv4 prefix such as 192.168.2.0/24", a.subnet)
			}
			topo.Subnet = p
		}
		for _, s := range a.dns {
			ap, err := parseDNSAddr(s)
			if err != nil {
				return usagef("share: --dns %q: %v", s, err)
			}
			topo.DNS = append(topo.DNS, ap)
		}
		name := a.inst.name
		topo.Ready = func(sh *lan.Share) { printShareHelp(env.stdout, name, a.lan, a.wan, sh) }
		return runInstance(ctx, env, "share", a.inst, a.link, a.capture, "pi2hop share "+strings.Join(givenFlags(fs), " "), topo)
	}
}

// parseDNSAddr takes an address with or without a port (53).
func parseDNSAddr(s string) (netip.AddrPort, error) {
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap, nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("want an IP address, optionally with a port (1.1.1.1, [2606:4700::1111]:53)")
	}
	return netip.AddrPortFrom(a, 53), nil
}

// printShareHelp is the start-up text: what the tester does next.
func printShareHelp(w io.Writer, name, lanIf, wanIf string, sh *lan.Share) {
	nameFlag := ""
	if name != instance.DefaultName {
		nameFlag = " --name " + name
	}
	v6 := "no IPv6 (the WAN has none, or --no-ipv6)"
	if sh.ULA.IsValid() {
		v6 = fmt.Sprintf("IPv6 %v (box %v, NAT66)", sh.ULA, sh.Router6)
	}
	fmt.Fprintf(w, `pi2hop share: %s is shared with the LAN on %s through the bottleneck.
  LAN     %v, box %v (router, DHCP and DNS); %s
  1. Join the network on %s (Wi-Fi through hostapd, or a cable): the device gets an address by DHCP.
  2. Switch L4S on: iOS  Settings > Developer > L4S
                    macOS  defaults write -g network_enable_l4s -bool true
  3. Throttle:   pi2hop set%s --rate 10mbit
     Unthrottle: pi2hop set%s --rate unlimited
     Watch:      pi2hop stats%s   (leases and bytes per device)
  4. Stop: Ctrl-C here (everything is taken down); after a crash: pi2hop share --cleanup%s
`, wanIf, lanIf, sh.Subnet, sh.Router, v6, lanIf, nameFlag, nameFlag, nameFlag, nameFlag)
}
