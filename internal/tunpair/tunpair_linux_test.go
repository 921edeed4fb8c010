package tunpair

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/pi2hop/pi2hop/internal/roottest"
	"github.com/pi2hop/pi2hop/netsys"
	"github.com/pi2hop/pi2hop/tun"
	"github.com/vishvananda/netlink"
)

func TestOpenRefusesBadSpecs(t *testing.T) {
	for _, tc := range []struct {
		spec Spec
		want string
	}{
		{Spec{}, "want a client namespace"},
		{Spec{ClientNS: "a", ServerNS: "a"}, "want a client namespace distinct"},
		{Spec{ClientNS: "a", Subnet4: netip.MustParsePrefix("10.0.0.0/31")}, "/30 or wider"},
		{Spec{ClientNS: "a", Subnet6: netip.MustParsePrefix("10.0.0.0/24")}, "IPv6 one"},
	} {
		if _, err := Open(tc.spec); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Open(%+v) = %v, want an error saying %q", tc.spec, err, tc.want)
		}
	}
}

// The ends are what Ends says: the client at .2 and ::2 of the default
// subnets with a default route into its TUN, the server at .1; Abandon
// removes both namespaces.
func TestOpenAndAbandon(t *testing.T) {
	roottest.Need(t)
	prefix := roottest.Name("p2t")
	e, err := Open(Spec{ClientNS: prefix + "c", ServerNS: prefix + "s", MTU: 1400, Backend: tun.BackendOffload})
	if err != nil {
		t.Fatal(err)
	}
	abandoned := false
	t.Cleanup(func() {
		if !abandoned {
			Abandon(e.Devs[:], e.Journal)
		}
	})
	if e.ClientAddr != netip.MustParseAddr("10.254.0.2") || e.ServerAddr != netip.MustParseAddr("10.254.0.1") ||
		e.ClientAddr6 != netip.MustParseAddr("fd00:254::2") || e.ServerAddr6 != netip.MustParseAddr("fd00:254::1") {
		t.Errorf("addresses %v %v %v %v, want 10.254.0.2, .1, fd00:254::2, ::1", e.ClientAddr, e.ServerAddr, e.ClientAddr6, e.ServerAddr6)
	}
	err = e.InClient(func() error {
		l, err := netlink.LinkByName(e.ClientDev)
		if err != nil {
			return err
		}
		if l.Attrs().MTU != 1400 {
			t.Errorf("client TUN MTU %d, want 1400", l.Attrs().MTU)
		}
		addrs, err := netlink.AddrList(l, netlink.FAMILY_V4)
		if err != nil {
			return err
		}
		if len(addrs) != 1 || addrs[0].IPNet.String() != "10.254.0.2/24" {
			t.Errorf("client addresses %v, want 10.254.0.2/24", addrs)
		}
		routes, err := netlink.RouteGet(netip.MustParseAddr("192.0.2.1").AsSlice())
		if err != nil {
			return err
		}
		if len(routes) != 1 || routes[0].LinkIndex != l.Attrs().Index {
			t.Errorf("route to 192.0.2.1: %+v, want through %s", routes, e.ClientDev)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	abandoned = true
	Abandon(e.Devs[:], e.Journal)
	for _, ns := range []string{e.ClientNS, e.ServerNS} {
		if netsys.NamespaceExists(ns) {
			t.Errorf("namespace %s left after Abandon", ns)
		}
	}
}
