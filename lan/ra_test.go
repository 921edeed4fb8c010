package lan

import (
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/mdlayher/ndp"
)

func TestRouterAdvertisementMessage(t *testing.T) {
	cfg := RAConfig{Iface: "lan0", Prefix: netip.MustParsePrefix("fd12:3456:789a::/64")}
	if err := cfg.fill(); err != nil {
		t.Fatal(err)
	}
	hw, _ := net.ParseMAC("02:00:00:00:00:01")
	b, err := ndp.MarshalMessage(cfg.message(false, hw, 1500))
	if err != nil {
		t.Fatal(err)
	}
	m, err := ndp.ParseMessage(b)
	if err != nil {
		t.Fatal(err)
	}
	ra := m.(*ndp.RouterAdvertisement)
	if ra.RouterLifetime != 1800*time.Second || ra.CurrentHopLimit != 64 || ra.ManagedConfiguration {
		t.Errorf("RA header: lifetime %v hop limit %d managed %v; want 1800s, 64, SLAAC only", ra.RouterLifetime, ra.CurrentHopLimit, ra.ManagedConfiguration)
	}
	var pi *ndp.PrefixInformation
	var rdnss *ndp.RecursiveDNSServer
	var lla *ndp.LinkLayerAddress
	var mtu *ndp.MTU
	for _, o := range ra.Options {
		switch o := o.(type) {
		case *ndp.PrefixInformation:
			pi = o
		case *ndp.RecursiveDNSServer:
			rdnss = o
		case *ndp.LinkLayerAddress:
			lla = o
		case *ndp.MTU:
			mtu = o
		}
	}
	if pi == nil || pi.Prefix.String() != "fd12:3456:789a::" || pi.PrefixLength != 64 || !pi.OnLink || !pi.AutonomousAddressConfiguration ||
		pi.ValidLifetime != 24*time.Hour || pi.PreferredLifetime != 4*time.Hour {
		t.Errorf("prefix information %+v, want fd12:3456:789a::/64 on-link, autonomous, 24h/4h", pi)
	}
	if rdnss == nil || len(rdnss.Servers) != 1 || rdnss.Servers[0].String() != "fd12:3456:789a::1" || rdnss.Lifetime != 1800*time.Second {
		t.Errorf("RDNSS %+v, want fd12:3456:789a::1 for 1800s", rdnss)
	}
	if lla == nil || lla.Direction != ndp.Source || lla.Addr.String() != hw.String() {
		t.Errorf("source link-layer address %+v, want %v", lla, hw)
	}
	if mtu == nil || mtu.MTU != 1500 {
		t.Errorf("MTU option %+v, want 1500", mtu)
	}
	final := cfg.message(true, hw, 1500)
	fpi := final.Options[0].(*ndp.PrefixInformation)
	frd := final.Options[1].(*ndp.RecursiveDNSServer)
	if final.RouterLifetime != 0 || fpi.ValidLifetime != 0 || fpi.PreferredLifetime != 0 || frd.Lifetime != 0 {
		t.Errorf("final RA: router %v, prefix valid %v preferred %v, RDNSS %v; want all 0", final.RouterLifetime, fpi.ValidLifetime, fpi.PreferredLifetime, frd.Lifetime)
	}
}

func TestRAConfigAndULA(t *testing.T) {
	for _, c := range []RAConfig{
		{Prefix: netip.MustParsePrefix("fd00::/48")},
		{Prefix: netip.MustParsePrefix("192.168.2.0/24")},
		{Prefix: netip.MustParsePrefix("fd00::/64"), Interval: time.Second},
	} {
		if err := c.fill(); err == nil {
			t.Errorf("RA config %+v accepted", c)
		}
	}
	a, b := NewULA(), NewULA()
	for _, p := range []netip.Prefix{a, b} {
		if p.Bits() != 64 || p.Addr().As16()[0] != 0xfd || p.Masked() != p || p.Addr().As16()[6] != 0 || p.Addr().As16()[7] != 0 {
			t.Errorf("NewULA() = %v, want fdXX:XXXX:XXXX:0::/64", p)
		}
	}
	if a == b {
		t.Errorf("two NewULA calls gave %v: the global ID is not random", a)
	}
	if r := RouterAddr6(a); !a.Contains(r) || r.As16()[15] != 1 {
		t.Errorf("RouterAddr6(%v) = %v, want ::1 in it", a, r)
	}
}
