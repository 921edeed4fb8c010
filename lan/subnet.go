package lan

import (
	"fmt"
	"net/netip"
)

// InUse is a prefix the box already has: a route or an address, with
// what it is, for the error that names it.
type InUse struct {
	Prefix netip.Prefix
	What   string // e.g. "route 192.168.0.0/16 dev eth0"
}

// DefaultSubnets are the /24s tried in order for a LAN: 192.168.2.0/24
// first, the range a Mac's Internet Sharing hands out, then the rest of
// 192.168.0.0/16 above it, then 172.16.0.0/12's first /24s.
func DefaultSubnets() []netip.Prefix {
	var ps []netip.Prefix
	for i := 2; i <= 254; i++ {
		ps = append(ps, netip.PrefixFrom(netip.AddrFrom4([4]byte{192, 168, byte(i), 0}), 24))
	}
	for i := 16; i <= 31; i++ {
		ps = append(ps, netip.PrefixFrom(netip.AddrFrom4([4]byte{172, byte(i), 0, 0}), 24))
	}
	return ps
}

// CheckSubnet returns an error naming the first of used that overlaps
// p. Default routes (length 0) overlap everything and are not counted:
// a LAN behind the box is more specific than the way out.
func CheckSubnet(p netip.Prefix, used []InUse) error {
	if !p.IsValid() || !p.Addr().Is4() {
		return fmt.Errorf("subnet %v: want an IPv4 prefix such as 192.168.2.0/24", p)
	}
	if p.Bits() > 30 {
		return fmt.Errorf("subnet %v: want /30 or shorter, room for the box and a device", p)
	}
	p = p.Masked()
	for _, u := range used {
		if u.Prefix.Bits() == 0 || u.Prefix.Addr().Is6() != p.Addr().Is6() {
			continue
		}
		if u.Prefix.Overlaps(p) {
			return fmt.Errorf("subnet %v overlaps %s", p, u.What)
		}
	}
	return nil
}

// ChooseSubnet returns the first of candidates that overlaps nothing in
// used (DefaultSubnets when candidates is empty).
func ChooseSubnet(used []InUse, candidates ...netip.Prefix) (netip.Prefix, error) {
	if len(candidates) == 0 {
		candidates = DefaultSubnets()
	}
	for _, p := range candidates {
		if CheckSubnet(p, used) == nil {
			return p.Masked(), nil
		}
	}
	return netip.Prefix{}, fmt.Errorf("no free subnet among %d candidates (%v .. %v): give one with --subnet", len(candidates), candidates[0], candidates[len(candidates)-1])
}

// RouterAddr is the box's address in subnet p: the first host address
// (192.168.2.1 in 192.168.2.0/24), as a Mac takes.
func RouterAddr(p netip.Prefix) netip.Addr {
	return p.Masked().Addr().Next()
}
