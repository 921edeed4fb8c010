package topology

import (
	"context"
	"fmt"
	"net/netip"

	"github.com/pi2hop/pi2hop/hop"
	"github.com/pi2hop/pi2hop/netsys"
	"github.com/pi2hop/pi2hop/tun"
)

// Pair is the two-ended topology of the lab and `pi2hop shell`: a client
// namespace and a server namespace (or the host), each routing into its own
// TUN device, with the hop in this process forwarding between the two
// devices (mahimahi style: no kernel forwarding in between).
//
// Addresses come from PairSpec's subnets: the server end is .1 (::1), the
// client end .2 (::2). Each created namespace also gets default routes
// into its TUN, so every destination goes through the hop.
type Pair struct {
	ClientNS, ServerNS       string // ServerNS "" = the host namespace
	ClientDev, ServerDev     string // TUN names in those namespaces
	ClientAddr, ServerAddr   netip.Addr
	ClientAddr6, ServerAddr6 netip.Addr
	Hop                      *hop.Hop

	started // Done, Err, Close
}

// PairSpec places a Pair's ends. Zero fields take the defaults.
type PairSpec struct {
	ClientNS  string // created by NewPairWith; required
	ServerNS  string // created too; "" = use the host namespace (not created)
	ClientDev string // default "pi2hop0"
	ServerDev string // default "pi2hop0"; must be unique on the host when ServerNS is ""
	Subnet4   netip.Prefix
	Subnet6   netip.Prefix
	// Journal records every change; nil means a journal of the pair's own.
	// Close undoes all of it, including what the caller recorded there.
	Journal *netsys.Journal
	// Tap, if not nil, is installed on the hop before it starts.
	Tap hop.Tap
}

// Default subnets of a Pair: test addresses that live only inside the
// namespaces (and, for a shell, on its host-side TUN).
var (
	DefaultSubnet4 = netip.MustParsePrefix("10.254.0.0/24")
	DefaultSubnet6 = netip.MustParsePrefix("fd00:254::/64")
)

// NewPair creates namespaces "<prefix>c" (client) and "<prefix>s"
// (server), a TUN in each with IPv4 and IPv6 addresses, and starts the hop
// between them; it runs until ctx is done or Close.
func NewPair(ctx context.Context, prefix string, cfg hop.Config) (*Pair, error) {
	return NewPairWith(ctx, PairSpec{ClientNS: prefix + "c", ServerNS: prefix + "s"}, cfg)
}

// NewPairWith builds the Pair spec describes and starts its hop. On error
// everything made so far is undone.
func NewPairWith(ctx context.Context, spec PairSpec, cfg hop.Config) (p *Pair, err error) {
	spec = spec.withDefaults()
	if spec.ClientNS == "" || spec.ClientNS == spec.ServerNS {
		return nil, fmt.Errorf("topology: pair namespaces %q and %q: want a client namespace distinct from the server's", spec.ClientNS, spec.ServerNS)
	}
	if !spec.Subnet4.Addr().Is4() || spec.Subnet4.Bits() > 30 || !spec.Subnet6.Addr().Is6() || spec.Subnet6.Bits() > 126 {
		return nil, fmt.Errorf("topology: pair subnets %v, %v: want an IPv4 prefix of /30 or wider and an IPv6 one of /126 or wider", spec.Subnet4, spec.Subnet6)
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	mtu, backend := mtuOf(cfg), cfg.TUN
	j := spec.Journal
	p = &Pair{
		ClientNS: spec.ClientNS, ServerNS: spec.ServerNS,
		ClientDev: spec.ClientDev, ServerDev: spec.ServerDev,
		ServerAddr: spec.Subnet4.Masked().Addr().Next(), ServerAddr6: spec.Subnet6.Masked().Addr().Next(),
	}
	p.ClientAddr, p.ClientAddr6 = p.ServerAddr.Next(), p.ServerAddr6.Next()
	var devs []tun.Device
	defer func() {
		if err != nil {
			abandon(devs, j)
		}
	}()
	ends := []struct {
		ns, dev     string
		addr, addr6 netip.Addr
		create      bool
	}{
		{spec.ClientNS, spec.ClientDev, p.ClientAddr, p.ClientAddr6, true},
		{spec.ServerNS, spec.ServerDev, p.ServerAddr, p.ServerAddr6, spec.ServerNS != ""},
	}
	for _, e := range ends {
		if e.create {
			if err := j.NewNamespace(e.ns); err != nil {
				return nil, err
			}
		}
		d, err := OpenTUN(j, e.ns, e.dev, mtu, backend)
		if err != nil {
			return nil, err
		}
		devs = append(devs, d)
		for _, a := range []netip.Prefix{
			netip.PrefixFrom(e.addr, spec.Subnet4.Bits()),
			netip.PrefixFrom(e.addr6, spec.Subnet6.Bits()),
		} {
			if err := j.AddAddr(e.ns, e.dev, a); err != nil {
				return nil, err
			}
		}
		if !e.create {
			continue // never touch the host's default routes
		}
		for _, dst := range []string{"0.0.0.0/0", "::/0"} {
			r := netsys.Route{Dst: netip.MustParsePrefix(dst), Dev: e.dev}
			if err := j.AddRoute(e.ns, r); err != nil {
				return nil, err
			}
		}
	}
	if p.Hop, err = p.startHop(ctx, cfg, devs, spec.Tap, j); err != nil {
		return nil, err
	}
	return p, nil
}

func (s PairSpec) withDefaults() PairSpec {
	if s.ClientDev == "" {
		s.ClientDev = "pi2hop0"
	}
	if s.ServerDev == "" {
		s.ServerDev = "pi2hop0"
	}
	if !s.Subnet4.IsValid() {
		s.Subnet4 = DefaultSubnet4
	}
	if !s.Subnet6.IsValid() {
		s.Subnet6 = DefaultSubnet6
	}
	if s.Journal == nil {
		s.Journal = netsys.NewJournal(nil)
	}
	return s
}

// InClient runs f inside the client namespace (see netsys.Do).
func (p *Pair) InClient(f func() error) error { return netsys.Do(p.ClientNS, f) }

// InServer runs f inside the server namespace ("" = the host's).
func (p *Pair) InServer(f func() error) error { return netsys.Do(p.ServerNS, f) }
