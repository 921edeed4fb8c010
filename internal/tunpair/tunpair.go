// Package tunpair builds the two ends of a Pair: a client namespace and a
// server namespace (or the host), each routing into a TUN device of its
// own, for a forwarder in this process to join; and runs that forwarder
// until it is closed. topology.Pair is these ends with a hop between them;
// hop's root tests build the same ends here, below hop, since topology
// imports hop.
package tunpair

import (
	"fmt"
	"net/netip"

	"github.com/pi2hop/pi2hop/netsys"
	"github.com/pi2hop/pi2hop/tun"
)

// Spec places a pair's ends. Zero fields take the defaults.
type Spec struct {
	ClientNS  string // created by Open; required
	ServerNS  string // created too; "" = use the host namespace (not created)
	ClientDev string // default "pi2hop0"
	ServerDev string // default "pi2hop0"; must be unique on the host when ServerNS is ""
	Subnet4   netip.Prefix
	Subnet6   netip.Prefix
	// Journal records every change; nil means a journal of the pair's own.
	Journal *netsys.Journal
	MTU     int // of both TUN devices
	Backend tun.Backend
}

// Default subnets of a pair: test addresses that live only inside the
// namespaces (and, for a shell, on its host-side TUN).
var (
	DefaultSubnet4 = netip.MustParsePrefix("10.254.0.0/24")
	DefaultSubnet6 = netip.MustParsePrefix("fd00:254::/64")
)

// Ends are a pair's namespaces and TUN devices. Addresses come from the
// Spec's subnets: the server end is .1 (::1), the client end .2 (::2).
// Each created namespace also has default routes into its TUN, so every
// destination goes through the forwarder between Devs.
type Ends struct {
	ClientNS, ServerNS       string // ServerNS "" = the host namespace
	ClientDev, ServerDev     string // TUN names in those namespaces
	ClientAddr, ServerAddr   netip.Addr
	ClientAddr6, ServerAddr6 netip.Addr
	Devs                     [2]tun.Device   // client's, server's
	Journal                  *netsys.Journal // holds every change Open made
}

// Open builds the ends spec describes. On error everything made so far is
// undone (and so is what the caller recorded in spec.Journal).
func Open(spec Spec) (e *Ends, err error) {
	spec = spec.withDefaults()
	if spec.ClientNS == "" || spec.ClientNS == spec.ServerNS {
		return nil, fmt.Errorf("topology: pair namespaces %q and %q: want a client namespace distinct from the server's", spec.ClientNS, spec.ServerNS)
	}
	if !spec.Subnet4.Addr().Is4() || spec.Subnet4.Bits() > 30 || !spec.Subnet6.Addr().Is6() || spec.Subnet6.Bits() > 126 {
		return nil, fmt.Errorf("topology: pair subnets %v, %v: want an IPv4 prefix of /30 or wider and an IPv6 one of /126 or wider", spec.Subnet4, spec.Subnet6)
	}
	j := spec.Journal
	e = &Ends{
		ClientNS: spec.ClientNS, ServerNS: spec.ServerNS,
		ClientDev: spec.ClientDev, ServerDev: spec.ServerDev,
		ServerAddr: spec.Subnet4.Masked().Addr().Next(), ServerAddr6: spec.Subnet6.Masked().Addr().Next(),
		Journal: j,
	}
	e.ClientAddr, e.ClientAddr6 = e.ServerAddr.Next(), e.ServerAddr6.Next()
	defer func() {
		if err != nil {
			Abandon(e.Devs[:], j)
		}
	}()
	ends := []struct {
		ns, dev     string
		addr, addr6 netip.Addr
		create      bool
	}{
		{spec.ClientNS, spec.ClientDev, e.ClientAddr, e.ClientAddr6, true},
		{spec.ServerNS, spec.ServerDev, e.ServerAddr, e.ServerAddr6, spec.ServerNS != ""},
	}
	for i, end := range ends {
		if end.create {
			if err := j.NewNamespace(end.ns); err != nil {
				return nil, err
			}
		}
		d, err := OpenTUN(j, end.ns, end.dev, spec.MTU, spec.Backend)
		if err != nil {
			return nil, err
		}
		e.Devs[i] = d
		for _, a := range []netip.Prefix{
			netip.PrefixFrom(end.addr, spec.Subnet4.Bits()),
			netip.PrefixFrom(end.addr6, spec.Subnet6.Bits()),
		} {
			if err := j.AddAddr(end.ns, end.dev, a); err != nil {
				return nil, err
			}
		}
		if !end.create {
			continue // never touch the host's default routes
		}
		for _, dst := range []string{"0.0.0.0/0", "::/0"} {
			r := netsys.Route{Dst: netip.MustParsePrefix(dst), Dev: end.dev}
			if err := j.AddRoute(end.ns, r); err != nil {
				return nil, err
			}
		}
	}
	return e, nil
}

func (s Spec) withDefaults() Spec {
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
func (e *Ends) InClient(f func() error) error { return netsys.Do(e.ClientNS, f) }

// InServer runs f inside the server namespace ("" = the host's).
func (e *Ends) InServer(f func() error) error { return netsys.Do(e.ServerNS, f) }

// OpenTUN opens TUN device name with backend b inside namespace ns ("" =
// the host's), recorded in j first: closing the device removes it, and
// the record covers a crash in between.
func OpenTUN(j *netsys.Journal, ns, name string, mtu int, b tun.Backend) (tun.Device, error) {
	var d tun.Device
	err := j.AddLink(ns, name, func() (err error) { d, err = tun.OpenBackend(name, mtu, b); return err })
	return d, err
}

// Abandon closes devs (nil entries skipped) and undoes j: what a topology
// does when building it fails half way.
func Abandon(devs []tun.Device, j *netsys.Journal) {
	for _, d := range devs {
		if d != nil {
			d.Close()
		}
	}
	j.Undo()
}
