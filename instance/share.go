package instance

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/pi2hop/pi2hop/hop"
	"github.com/pi2hop/pi2hop/internal/readlimit"
	"github.com/pi2hop/pi2hop/lan"
	"github.com/pi2hop/pi2hop/netsys"
	"github.com/pi2hop/pi2hop/topology"
)

// Share makes this box the Internet Sharing hop of a LAN (pi2hop share),
// as a Mac does: lan.StartShare addresses the LAN and serves DHCP, DNS and
// router advertisements with NAT out of the WAN, and a Gateway puts the
// bottleneck between the two. The LAN side starts first, so the WAN's
// accept_ra is set before the Gateway turns on IPv6 forwarding; it stops
// last, so the final RA goes out while the box still routes.
type Share struct {
	LAN, WAN  string
	Subnet    netip.Prefix     // zero: a free /24, 192.168.2.0/24 first
	NoIPv6    bool             // no ULA prefix, RAs or NAT66
	DNS       []netip.AddrPort // upstreams; zero: the box's resolv.conf
	LeaseTime time.Duration    // zero: lan.DefaultLeaseTime
	// FirewallAccept: accept rules where a firewall drops forwarding
	// (topology.GatewaySpec).
	FirewallAccept bool
	// Ready, if set, is called once the share serves, with it: the
	// command prints what to do next.
	Ready func(*lan.Share)

	sh *lan.Share
	g  *topology.Gateway
}

// shareFile keeps a named share's LAN state across restarts: the lease
// table (a device keeps its address) and the ULA prefix (its IPv6 ones).
type shareFile struct {
	ULA    netip.Prefix `json:"ula"`
	Leases []lan.Lease  `json:"leases"`
}

// SharePath is where instance name keeps its shareFile. It outlives the
// instance (in /run, so not a reboot), as the leases it holds do.
func SharePath(name string) string { return filepath.Join(RunDir, name+".share.json") }

// maxShareFile bounds a shareFile: it holds a few names and addresses.
const maxShareFile = 1 << 20

func readShareFile(name string) (shareFile, error) {
	var f shareFile
	b, err := readlimit.ReadFile(SharePath(name), maxShareFile)
	if errors.Is(err, os.ErrNotExist) {
		return f, nil
	}
	if err == nil {
		err = json.Unmarshal(b, &f)
	}
	if err != nil {
		return f, fmt.Errorf("share state %s: %w (remove it to start afresh)", SharePath(name), err)
	}
	return f, nil
}

func (t *Share) Kind() string { return "share" }

// shareSubnet allocates the LAN's subnet among instances: the first of
// lan.DefaultSubnets that no running share holds and nothing on the box
// overlaps, so two shares starting at once do not both take the first.
func shareSubnet(env *Env) (netip.Prefix, error) {
	used, err := lan.BoxInUse("")
	if err != nil {
		return netip.Prefix{}, err
	}
	cands := lan.DefaultSubnets()
	slot, err := env.slotFrom(SpaceShareLAN, len(cands), 1, func(n int) (bool, error) {
		return lan.CheckSubnet(cands[n-1], used) == nil, nil
	})
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("share: LAN subnet (%v .. %v): %w: give one with --subnet", cands[0], cands[len(cands)-1], err)
	}
	return cands[slot-1], nil
}

func (t *Share) Start(ctx context.Context, env *Env) (*hop.Hop, error) {
	if env.Name == "" {
		return nil, errors.New("share: needs an instance name (its devices, table and lease file are named after it)")
	}
	saved, err := readShareFile(env.Name)
	if err != nil {
		return nil, err
	}
	var mu sync.Mutex
	save := func(ls []lan.Lease) {
		mu.Lock()
		defer mu.Unlock()
		saved.Leases = ls
		if err := writeShareFile(env.Name, saved); err != nil {
			env.Log.Warn("share: save leases", "err", err)
		}
	}
	subnet := t.Subnet
	if !subnet.IsValid() {
		if subnet, err = shareSubnet(env); err != nil {
			return nil, err
		}
	}
	sh, err := lan.StartShare(env.Journal, lan.ShareConfig{
		LAN: t.LAN, WAN: t.WAN, Subnet: subnet, NoIPv6: t.NoIPv6, ULA: saved.ULA,
		DNS: t.DNS, LeaseTime: t.LeaseTime, Leases: saved.Leases, OnLeases: save,
		Table: natTable(env.Name), Log: env.Log,
		// The Gateway writes uplink packets into NAME-dn, on the WAN side.
		WANSide: []string{t.WAN, gatewayDownDev(env.Name)},
	})
	if err != nil {
		return nil, err
	}
	t.sh = sh
	if sh.ULA.IsValid() && sh.ULA != saved.ULA {
		mu.Lock()
		saved.ULA = sh.ULA
		err := writeShareFile(env.Name, saved)
		mu.Unlock()
		if err != nil {
			return nil, err
		}
	}
	// Unthrottling live (set --rate unlimited) is how a share is used:
	// size the delay line for it.
	cfg := env.Config
	cfg.LineRate = max(cfg.LineRate, hop.UnlimitedLineRate)
	slot, err := gatewaySlot(env)
	if err != nil {
		return nil, err
	}
	g, err := topology.NewGateway(ctx, topology.GatewaySpec{Name: env.Name, Slot: slot, LAN: t.LAN, WAN: t.WAN, Journal: env.Journal, Tap: env.Tap(""), FirewallAccept: t.FirewallAccept}, cfg)
	if err != nil {
		return nil, err
	}
	t.g = g
	if g.DownDev != gatewayDownDev(env.Name) {
		return nil, fmt.Errorf("share: the gateway's downlink TUN is %s, the NAT zones expect %s", g.DownDev, gatewayDownDev(env.Name))
	}
	if t.Ready != nil {
		t.Ready(sh)
	}
	return g.Hop, nil
}

// shareLeftovers: the NAT table of a share of that name outlives its
// process (the LAN's addresses and sysctls are known only from the state
// file; the gateway's rules are swept for the interfaces given).
func shareLeftovers(name string) []netsys.Entry {
	return []netsys.Entry{{Kind: netsys.KindNftTable, Name: natTable(name)}}
}

// gatewayDownDev is the TUN topology.Gateway names NAME-dn, known before it
// exists so the NAT table can name it.
func gatewayDownDev(name string) string { return name + "-dn" }

func writeShareFile(name string, f shareFile) error {
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(RunDir, 0o700); err != nil {
		return err
	}
	tmp := SharePath(name) + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, SharePath(name))
}

func (t *Share) Attrs() []any {
	a := []any{"lan", t.g.LAN, "wan", t.g.WAN, "subnet", t.sh.Subnet, "router", t.sh.Router}
	if t.sh.ULA.IsValid() {
		a = append(a, "ula", t.sh.ULA)
	}
	a = append(a, "tun_up", t.g.UpDev, "tun_down", t.g.DownDev,
		"tables", fmt.Sprintf("%d,%d", t.g.UpTable, t.g.DownTable), "rule_pref", t.g.RulePriority)
	return append(a, acceptedAttrs(t.g)...)
}

// Wait returns when ctx is done, the hop stops on its own, or a LAN
// server fails.
func (t *Share) Wait(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return nil
	case <-t.g.Done():
		return t.g.Err()
	case err := <-t.sh.Err():
		return fmt.Errorf("share: %w", err)
	}
}

func (t *Share) Close() error {
	var errs []error
	if t.g != nil {
		errs = append(errs, t.g.Close())
	}
	if t.sh != nil {
		errs = append(errs, t.sh.Close())
	}
	return errors.Join(errs...)
}

// Clients lists the LAN's devices: leases and bytes (lan.Share.Clients).
func (t *Share) Clients() ([]lan.Client, error) {
	if t.sh == nil {
		return nil, nil
	}
	return t.sh.Clients()
}
