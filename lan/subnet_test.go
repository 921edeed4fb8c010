package lan

import (
	"net/netip"
	"strings"
	"testing"
)

func TestChooseSubnet(t *testing.T) {
	pp := netip.MustParsePrefix
	for _, c := range []struct {
		name string
		used []InUse
		want string
	}{
		{"nothing in use", nil, "192.168.2.0/24"},
		{"default route only", []InUse{{pp("0.0.0.0/0"), "route default"}}, "192.168.2.0/24"},
		{"a Mac's range taken", []InUse{{pp("192.168.2.0/24"), "route 192.168.2.0/24 dev eth0"}}, "192.168.3.0/24"},
		{"an address inside", []InUse{{pp("192.168.2.77/32"), "address"}, {pp("192.168.3.0/25"), "route"}}, "192.168.4.0/24"},
		{"a wide route", []InUse{{pp("192.168.0.0/16"), "route 192.168.0.0/16 dev vpn0"}}, "172.16.0.0/24"},
		{"IPv6 does not count", []InUse{{pp("::/0"), "v6 default"}, {pp("fd00::/8"), "ula"}}, "192.168.2.0/24"},
	} {
		got, err := ChooseSubnet(c.used)
		if err != nil || got.String() != c.want {
			t.Errorf("%s: %v, %v; want %s", c.name, got, err, c.want)
		}
	}
	all := []InUse{{netip.MustParsePrefix("192.168.0.0/16"), "r1"}, {netip.MustParsePrefix("172.16.0.0/12"), "r2"}}
	if p, err := ChooseSubnet(all); err == nil || !strings.Contains(err.Error(), "--subnet") {
		t.Errorf("all taken: %v, %v; want an error that points at --subnet", p, err)
	}
}

func TestCheckSubnetNamesTheRoute(t *testing.T) {
	used := []InUse{
		{netip.MustParsePrefix("10.0.0.0/8"), "route 10.0.0.0/8 dev wg0 table 51820"},
		{netip.MustParsePrefix("192.168.1.0/24"), "route 192.168.1.0/24 dev eth0"},
	}
	for _, c := range []struct {
		subnet, want string // want "" = accepted
	}{
		{"192.168.2.0/24", ""},
		{"192.168.1.128/25", "subnet 192.168.1.128/25 overlaps route 192.168.1.0/24 dev eth0"},
		{"192.168.0.0/16", "overlaps route 192.168.1.0/24 dev eth0"},
		{"10.42.0.0/24", "overlaps route 10.0.0.0/8 dev wg0 table 51820"},
		{"192.168.2.0/31", "want /30 or shorter"},
		{"fd00::/64", "want an IPv4 prefix"},
	} {
		err := CheckSubnet(netip.MustParsePrefix(c.subnet), used)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v, want accepted", c.subnet, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: %v, want an error with %q", c.subnet, err, c.want)
		}
	}
}

func TestRouterAndBroadcastAddr(t *testing.T) {
	for _, c := range []struct{ p, router, bcast string }{
		{"192.168.2.0/24", "192.168.2.1", "192.168.2.255"},
		{"10.9.0.0/29", "10.9.0.1", "10.9.0.7"},
		{"172.16.5.9/16", "172.16.0.1", "172.16.255.255"},
	} {
		p := netip.MustParsePrefix(c.p)
		if r := RouterAddr(p).String(); r != c.router {
			t.Errorf("RouterAddr(%s) = %s, want %s", c.p, r, c.router)
		}
		if b := broadcastAddr(p).String(); b != c.bcast {
			t.Errorf("broadcastAddr(%s) = %s, want %s", c.p, b, c.bcast)
		}
	}
}
