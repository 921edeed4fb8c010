package lan

import (
	"fmt"
	"net/netip"

	"github.com/pi2hop/pi2hop/netsys"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// BoxInUse lists every IPv4 route (of every routing table) and address
// of namespace ns ("" = the host's), for CheckSubnet and ChooseSubnet.
func BoxInUse(ns string) ([]InUse, error) {
	var used []InUse
	err := netsys.Do(ns, func() error {
		h, err := netlink.NewHandle()
		if err != nil {
			return err
		}
		defer h.Close()
		names := map[int]string{}
		links, err := h.LinkList()
		if err != nil {
			return fmt.Errorf("list devices: %w", err)
		}
		for _, l := range links {
			names[l.Attrs().Index] = l.Attrs().Name
		}
		routes, err := h.RouteListFiltered(netlink.FAMILY_V4, &netlink.Route{Table: unix.RT_TABLE_UNSPEC}, netlink.RT_FILTER_TABLE)
		if err != nil {
			return fmt.Errorf("list routes: %w", err)
		}
		for _, r := range routes {
			if r.Dst == nil {
				continue // a default route
			}
			p, ok := prefixOf(r.Dst.IP, r.Dst.Mask)
			if !ok {
				continue
			}
			what := fmt.Sprintf("route %v dev %s", p, names[r.LinkIndex])
			if r.Table != unix.RT_TABLE_MAIN {
				what += fmt.Sprintf(" table %d", r.Table)
			}
			used = append(used, InUse{Prefix: p, What: what})
		}
		addrs, err := h.AddrList(nil, netlink.FAMILY_V4)
		if err != nil {
			return fmt.Errorf("list addresses: %w", err)
		}
		for _, a := range addrs {
			p, ok := prefixOf(a.IP, a.Mask)
			if !ok {
				continue
			}
			used = append(used, InUse{Prefix: p.Masked(), What: fmt.Sprintf("address %v on %s", p, names[a.LinkIndex])})
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("lan: routes and addresses in namespace %q: %w", ns, err)
	}
	return used, nil
}

func prefixOf(ip []byte, mask []byte) (netip.Prefix, bool) {
	a, ok := netip.AddrFromSlice(ip)
	if !ok {
		return netip.Prefix{}, false
	}
	ones := 0
	for _, b := range mask {
		for ; b&0x80 != 0; b <<= 1 {
			ones++
		}
	}
	return netip.PrefixFrom(a.Unmap(), ones), true
}

// WANHasIPv6 reports whether device wan in ns has a global IPv6 address
// and ns has an IPv6 default route: only then is there an IPv6 Internet
// to advertise a router for.
func WANHasIPv6(ns, wan string) (bool, error) {
	var has bool
	err := netsys.Do(ns, func() error {
		h, err := netlink.NewHandle()
		if err != nil {
			return err
		}
		defer h.Close()
		l, err := h.LinkByName(wan)
		if err != nil {
			return fmt.Errorf("device %q: %w", wan, err)
		}
		addrs, err := h.AddrList(l, netlink.FAMILY_V6)
		if err != nil {
			return err
		}
		global := false
		for _, a := range addrs {
			ip, _ := netip.AddrFromSlice(a.IP)
			global = global || ip.IsGlobalUnicast()
		}
		if !global {
			return nil
		}
		routes, err := h.RouteList(nil, netlink.FAMILY_V6)
		if err != nil {
			return err
		}
		for _, r := range routes {
			if r.Dst == nil {
				has = true
			} else if ones, _ := r.Dst.Mask.Size(); ones == 0 {
				has = true
			}
		}
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("lan: IPv6 on %q in namespace %q: %w", wan, ns, err)
	}
	return has, nil
}
