package topology

import (
	"context"
	"fmt"
	"hash/fnv"
	"net"
	"net/netip"

	"github.com/pi2hop/pi2hop/hop"
	"github.com/pi2hop/pi2hop/internal/tunpair"
	"github.com/pi2hop/pi2hop/netsys"
	"github.com/pi2hop/pi2hop/tun"
)

// Gateway is the topology of `pi2hop run`: the bottleneck goes between two
// interfaces of this box. Policy rules by input interface send what
// arrives on the LAN interface into the uplink TUN and what arrives on
// the WAN interface into the downlink TUN; the hop writes each packet into
// the other TUN, where the kernel receives it and routes it by the main
// table as it would have without us. The rules sit after the local table
// (priority 0), so traffic to the box itself is untouched.
//
//	LAN ─► rule iif LAN ─► table T   ─► NAME-up ─► hop (up)   ─► NAME-dn ─► main ─► WAN
//	WAN ─► rule iif WAN ─► table T+1 ─► NAME-dn ─► hop (down) ─► NAME-up ─► main ─► LAN
//
// It turns on forwarding and loosens rp_filter (a packet comes back from a
// TUN with a source routed elsewhere); the journal restores both.
type Gateway struct {
	LAN, WAN       string // the interfaces bridged
	UpDev, DownDev string // the TUN devices: NAME-up, NAME-dn
	UpTable        int    // routing table of the uplink; the downlink's is UpTable+1
	DownTable      int
	RulePriority   int
	Hop            *hop.Hop
	// Accepted are the firewall chains given accept rules for the
	// gateway's forwarding (GatewaySpec.FirewallAccept).
	Accepted         []netsys.ForwardAccept
	*tunpair.Running // Done, Err, Close
}

// GatewaySpec places a Gateway.
type GatewaySpec struct {
	Name     string // instance name: names the TUN devices
	LAN, WAN string // existing interfaces
	// Slot picks the routing tables and rule priority (GatewayTablesAt):
	// one the caller allocated among instances, or 0 for the name's own
	// (GatewaySlot).
	Slot int
	// Journal records every change; nil means a journal of the gateway's
	// own. Close undoes all of it.
	Journal *netsys.Journal
	Tap     hop.Tap // installed before the hop starts, if not nil
	// FirewallAccept lets the gateway's forwarding past a firewall whose
	// forward chain drops by policy (Docker's): see netsys.AcceptForward.
	FirewallAccept bool
}

// GatewaySlots is how many sets of routing tables and rule priority the
// gateways of this box spread over: slots 1 to GatewaySlots.
const GatewaySlots = 4096

// GatewaySlot is instance name's own slot: fixed per name, so a cleanup
// without the state file finds its rules, and spread so that two
// instances seldom collide (the instance moves on to the next free slot
// when they do, and records it).
func GatewaySlot(name string) int {
	h := fnv.New32a()
	h.Write([]byte(name))
	return int(h.Sum32()%GatewaySlots) + 1
}

// GatewayTablesAt returns the routing tables and rule priority of slot n.
// The priority sits between the local (0) and main (32766) tables' rules.
func GatewayTablesAt(n int) (up, down, prio int) {
	n--
	return 0x7000 + 2*n, 0x7000 + 2*n + 1, 9000 + n
}

// GatewayTables returns the routing tables and rule priority of instance
// name's own slot (GatewaySlot).
func GatewayTables(name string) (up, down, prio int) { return GatewayTablesAt(GatewaySlot(name)) }

// GatewayLeftovers lists what a Gateway of instance name between
// interfaces ifaces leaves behind when its process dies: its policy rules
// (the TUN devices, and the routes through them, die with the process). A
// cleanup sweeps them when the journal's record is lost. Each rule names
// its input interface: a rule of someone else's at the same table and
// priority but on another interface is not ours. Without ifaces there is
// nothing to sweep.
func GatewayLeftovers(name string, ifaces ...string) []netsys.Entry {
	up, down, prio := GatewayTables(name)
	var es []netsys.Entry
	for _, iif := range ifaces {
		for _, table := range []int{up, down} {
			for _, fam := range []int{4, 6} {
				es = append(es, netsys.Entry{Kind: netsys.KindRule, Name: iif, Table: table, Priority: prio, Family: fam})
			}
		}
	}
	return es
}

// NewGateway builds the Gateway spec describes and starts its hop, which
// runs until ctx is done or Close. On error everything made so far is
// undone.
func NewGateway(ctx context.Context, spec GatewaySpec, cfg hop.Config) (g *Gateway, err error) {
	switch {
	case spec.LAN == "" || spec.WAN == "":
		return nil, fmt.Errorf("topology: gateway interfaces %q, %q: want a LAN and a WAN interface", spec.LAN, spec.WAN)
	case spec.LAN == spec.WAN:
		return nil, fmt.Errorf("topology: gateway LAN and WAN are both %q: want two interfaces", spec.LAN)
	case spec.Name == "":
		return nil, fmt.Errorf("topology: gateway without a name")
	}
	for _, ifname := range []string{spec.LAN, spec.WAN} {
		if _, err := net.InterfaceByName(ifname); err != nil {
			return nil, fmt.Errorf("topology: gateway interface %q: %w", ifname, err)
		}
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	j := spec.Journal
	if j == nil {
		j = netsys.NewJournal(nil)
	}
	g = &Gateway{LAN: spec.LAN, WAN: spec.WAN, UpDev: spec.Name + "-up", DownDev: spec.Name + "-dn"}
	slot := spec.Slot
	if slot == 0 {
		slot = GatewaySlot(spec.Name)
	}
	if slot < 1 || slot > GatewaySlots {
		return nil, fmt.Errorf("topology: gateway slot %d: want 1 to %d", slot, GatewaySlots)
	}
	g.UpTable, g.DownTable, g.RulePriority = GatewayTablesAt(slot)
	var devs []tun.Device
	defer func() {
		if err != nil {
			tunpair.Abandon(devs, j)
		}
	}()
	for _, n := range []string{g.UpDev, g.DownDev} {
		d, err := OpenTUN(j, "", n, mtuOf(cfg), cfg.TUN)
		if err != nil {
			return nil, err
		}
		devs = append(devs, d)
	}
	for _, r := range []struct {
		iif, dev string
		table    int
	}{{g.LAN, g.UpDev, g.UpTable}, {g.WAN, g.DownDev, g.DownTable}} {
		for fam, dst := range map[int]string{4: "0.0.0.0/0", 6: "::/0"} {
			if err := j.AddRoute("", netsys.Route{Dst: netip.MustParsePrefix(dst), Dev: r.dev, Table: r.table}); err != nil {
				return nil, err
			}
			if err := j.AddRule("", netsys.Rule{Family: fam, IIF: r.iif, Table: r.table, Priority: g.RulePriority}); err != nil {
				return nil, err
			}
		}
	}
	if err := gatewaySysctls(j, g.UpDev, g.DownDev); err != nil {
		return nil, err
	}
	if spec.FirewallAccept {
		// The kernel forwards each packet twice: LAN to NAME-up and
		// NAME-dn to WAN going up, WAN to NAME-dn and NAME-up to LAN
		// coming down.
		pairs := [][2]string{{g.LAN, g.UpDev}, {g.DownDev, g.WAN}, {g.WAN, g.DownDev}, {g.UpDev, g.LAN}}
		if g.Accepted, err = j.AcceptForward("", "pi2hop-"+spec.Name, pairs); err != nil {
			return nil, err
		}
	}
	if g.Hop, g.Running, err = startHop(ctx, cfg, devs, spec.Tap, j); err != nil {
		return nil, err
	}
	return g, nil
}

// gatewaySysctls turns on forwarding and makes reverse-path filtering
// accept packets coming back from the TUNs: the effective rp_filter of an
// interface is the larger of "all" and its own, so strict (1) in "all"
// becomes loose (2), and the TUNs' own are 0.
func gatewaySysctls(j *netsys.Journal, tuns ...string) error {
	type kv struct{ key, val string }
	set := []kv{{"net/ipv4/ip_forward", "1"}, {"net/ipv6/conf/all/forwarding", "1"}}
	for _, t := range tuns {
		set = append(set, kv{"net/ipv4/conf/" + t + "/rp_filter", "0"})
	}
	// BaseSysctl: what it was before any instance loosened it, so a
	// second gateway takes its share of the change a first one made.
	if v, err := j.BaseSysctl("", "net/ipv4/conf/all/rp_filter"); err == nil && v == "1" {
		set = append(set, kv{"net/ipv4/conf/all/rp_filter", "2"})
	}
	for _, s := range set {
		if err := j.SetSysctl("", s.key, s.val); err != nil {
			return err
		}
	}
	return nil
}
