package topology

import (
	"context"
	"net/netip"

	"github.com/pi2hop/pi2hop/hop"
	"github.com/pi2hop/pi2hop/internal/tunpair"
	"github.com/pi2hop/pi2hop/netsys"
)

// Pair is the two-ended topology of the lab and `pi2hop shell`: a client
// namespace and a server namespace (or the host), each routing into its own
// TUN device, with the hop in this process forwarding between the two
// devices (mahimahi style: no kernel forwarding in between). The ends are
// tunpair.Ends: addresses, namespaces, InClient and InServer.
type Pair struct {
	*tunpair.Ends
	Hop *hop.Hop

	*tunpair.Running // Done, Err, Close
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
	DefaultSubnet4 = tunpair.DefaultSubnet4
	DefaultSubnet6 = tunpair.DefaultSubnet6
)

// NewPair creates namespaces "<prefix>c" (client) and "<prefix>s"
// (server), a TUN in each with IPv4 and IPv6 addresses, and starts the hop
// between them; it runs until ctx is done or Close.
func NewPair(ctx context.Context, prefix string, cfg hop.Config) (*Pair, error) {
	return NewPairWith(ctx, PairSpec{ClientNS: prefix + "c", ServerNS: prefix + "s"}, cfg)
}

// NewPairWith builds the Pair spec describes and starts its hop. On error
// everything made so far is undone.
func NewPairWith(ctx context.Context, spec PairSpec, cfg hop.Config) (*Pair, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	ends, err := tunpair.Open(tunpair.Spec{
		ClientNS: spec.ClientNS, ServerNS: spec.ServerNS,
		ClientDev: spec.ClientDev, ServerDev: spec.ServerDev,
		Subnet4: spec.Subnet4, Subnet6: spec.Subnet6,
		Journal: spec.Journal, MTU: mtuOf(cfg), Backend: cfg.TUN,
	})
	if err != nil {
		return nil, err
	}
	p := &Pair{Ends: ends}
	if p.Hop, p.Running, err = startHop(ctx, cfg, ends.Devs[:], spec.Tap, ends.Journal); err != nil {
		tunpair.Abandon(ends.Devs[:], ends.Journal)
		return nil, err
	}
	return p, nil
}
