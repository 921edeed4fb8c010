package netsys

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// NewNamespace creates the named namespace (see the function of the same
// name) and records it.
func (j *Journal) NewNamespace(name string) error {
	return j.change(Entry{Kind: KindNetns, Name: name}, func() error { return NewNamespace(name) })
}

// AddLink records network device name in namespace ns and then runs
// create inside ns (see Do) to make it: a device this package does not
// open itself, such as a TUN device, which closing removes. The record
// covers a crash in between; Undo deletes the device if it is still
// there. If create fails, the record is dropped again.
func (j *Journal) AddLink(ns, name string, create func() error) error {
	return j.change(Entry{Kind: KindLink, NS: ns, Name: name}, func() error { return Do(ns, create) })
}

// AddVeth creates a veth pair: name in ns and peer in peerNS, both up.
func (j *Journal) AddVeth(ns, name, peerNS, peer string) error {
	return j.change(Entry{Kind: KindLink, NS: ns, Name: name}, func() error { return addVeth(ns, name, peerNS, peer) })
}

// addVeth makes the veth pair AddVeth records.
func addVeth(ns, name, peerNS, peer string) error {
	return withHandle(ns, func(h *netlink.Handle) error {
		peerH, err := nsHandle(peerNS)
		if err != nil {
			return err
		}
		defer peerH.Close()
		v := &netlink.Veth{
			LinkAttrs:     netlink.LinkAttrs{Name: name, TxQLen: 1000},
			PeerName:      peer,
			PeerNamespace: netlink.NsFd(int(peerH)),
		}
		if err := h.LinkAdd(v); err != nil {
			return fmt.Errorf("netsys: add veth %s/%s: %w", name, peer, err)
		}
		l, err := h.LinkByName(name)
		if err == nil {
			err = h.LinkSetUp(l)
		}
		if err != nil {
			return err
		}
		return withHandle(peerNS, func(ph *netlink.Handle) error {
			pl, err := ph.LinkByName(peer)
			if err == nil {
				err = ph.LinkSetUp(pl)
			}
			return err
		})
	})
}

// AddAddr adds address p (address and prefix length) to device dev in
// ns. IPv6 addresses skip duplicate address detection, so they are usable
// at once.
func (j *Journal) AddAddr(ns, dev string, p netip.Prefix) error {
	if !p.IsValid() {
		return fmt.Errorf("netsys: address %v: want ADDR/LEN", p)
	}
	e := Entry{Kind: KindAddr, NS: ns, Name: dev, Prefix: p.String()}
	return j.change(e, func() error {
		err := withHandle(ns, func(h *netlink.Handle) error {
			l, err := h.LinkByName(dev)
			if err != nil {
				return err
			}
			a := &netlink.Addr{IPNet: ipNet(p)}
			if !p.Addr().Is6() {
				return h.AddrAdd(l, a)
			}
			a.Flags = unix.IFA_F_NODAD
			if err := h.AddrAdd(l, a); err != nil {
				return err
			}
			return waitLocal(h, p.Addr())
		})
		if err != nil {
			return fmt.Errorf("netsys: add %s: %w", e, err)
		}
		return nil
	})
}

// waitLocal waits until the kernel delivers packets for IPv6 address a
// locally. An IPv6 address's local route is installed by addrconf's work
// queue, not by the request that added it (even with NODAD): until that
// work has run, packets to the address are treated as someone else's and
// dropped (Ip6InAddrErrors). On a loaded machine that can take over
// 100 ms, long enough to lose a hop's first packets.
func waitLocal(h *netlink.Handle, a netip.Addr) error {
	deadline := time.Now().Add(5 * time.Second)
	for {
		rs, err := h.RouteGet(a.AsSlice())
		if err == nil && len(rs) > 0 && rs[0].Type == unix.RTN_LOCAL {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("address %v not local within 5 s (route %v, %v)", a, rs, err)
		}
		time.Sleep(time.Millisecond)
	}
}

// AddRoute adds r in namespace ns.
func (j *Journal) AddRoute(ns string, r Route) error {
	e := Entry{Kind: KindRoute, NS: ns, Name: r.Dev, Prefix: r.Dst.Masked().String(), Table: r.Table}
	if r.Gw.IsValid() {
		e.Gw = r.Gw.String()
	}
	return j.change(e, func() error {
		err := withHandle(ns, func(h *netlink.Handle) error {
			rt, err := nlRoute(h, e)
			if err != nil {
				return err
			}
			return h.RouteAdd(rt)
		})
		if err != nil {
			return fmt.Errorf("netsys: add %s: %w", e, err)
		}
		return nil
	})
}

// AddRule adds policy rule r in namespace ns.
func (j *Journal) AddRule(ns string, r Rule) error {
	e := Entry{Kind: KindRule, NS: ns, Name: r.IIF, Table: r.Table, Priority: r.Priority, Family: r.Family}
	if r.Family != 4 && r.Family != 6 {
		return fmt.Errorf("netsys: rule family %d: want 4 or 6", r.Family)
	}
	return j.change(e, func() error {
		if err := withHandle(ns, func(h *netlink.Handle) error { return h.RuleAdd(nlRule(e)) }); err != nil {
			return fmt.Errorf("netsys: add %s: %w", e, err)
		}
		return nil
	})
}

// SetSysctl sets key (a path under /proc/sys, e.g. "net/ipv4/ip_forward")
// in namespace ns, recording the value it had the first time this journal
// changed it. Setting the value it already has records nothing. A
// namespace-wide sysctl of a journal that shares them (ShareSysctls) is
// reference-counted instead, and always recorded.
func (j *Journal) SetSysctl(ns, key, value string) error {
	if dir, holder := j.shared(ns, key); dir != "" {
		return j.setShared(dir, holder, key, value)
	}
	old, err := ReadSysctl(ns, key)
	if err != nil {
		return err
	}
	if old == value {
		return nil
	}
	if !j.has(KindSysctl, ns, key) {
		if _, err := j.record(Entry{Kind: KindSysctl, NS: ns, Name: key, Old: old}); err != nil {
			return err
		}
	}
	return WriteSysctl(ns, key, value)
}

// undo reverses one entry; a change that is already gone is not an error.
func undo(e Entry) error {
	if e.NS != "" && e.Kind != KindNetns && !NamespaceExists(e.NS) {
		return nil // went with its namespace
	}
	switch e.Kind {
	case KindNetns:
		return DeleteNamespace(e.Name)
	case KindNftTable:
		return undoNftTable(e)
	case KindNftAccept:
		return undoNftAccept(e)
	case KindSysctl:
		if e.Refs != "" {
			return undoShared(e)
		}
		// A device's sysctls go away with the device.
		if err := WriteSysctl(e.NS, e.Name, e.Old); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		return nil
	}
	return withHandle(e.NS, func(h *netlink.Handle) error {
		var err error
		switch e.Kind {
		case KindLink:
			var l netlink.Link
			if l, err = h.LinkByName(e.Name); err == nil {
				err = h.LinkDel(l)
			}
		case KindAddr:
			var l netlink.Link
			var p netip.Prefix
			if p, err = netip.ParsePrefix(e.Prefix); err != nil {
				return err
			}
			if l, err = h.LinkByName(e.Name); err == nil {
				err = h.AddrDel(l, &netlink.Addr{IPNet: ipNet(p)})
			}
		case KindRoute:
			var rt *netlink.Route
			if rt, err = nlRoute(h, e); err == nil {
				err = h.RouteDel(rt)
			}
		case KindRule:
			err = h.RuleDel(nlRule(e))
		default:
			return fmt.Errorf("unknown kind %q", e.Kind)
		}
		if gone(err) {
			return nil
		}
		return err
	})
}

// gone reports errors that mean "the thing to delete is not there".
func gone(err error) bool {
	var lnf netlink.LinkNotFoundError
	return err == nil || errors.As(err, &lnf) || errors.Is(err, unix.ENOENT) ||
		errors.Is(err, unix.ESRCH) || errors.Is(err, unix.ENODEV) ||
		errors.Is(err, unix.EADDRNOTAVAIL) || errors.Is(err, os.ErrNotExist)
}

func nlRoute(h *netlink.Handle, e Entry) (*netlink.Route, error) {
	p, err := netip.ParsePrefix(e.Prefix)
	if err != nil {
		return nil, err
	}
	l, err := h.LinkByName(e.Name)
	if err != nil {
		return nil, err
	}
	rt := &netlink.Route{LinkIndex: l.Attrs().Index, Dst: ipNet(p), Table: e.Table, Scope: netlink.SCOPE_LINK}
	if e.Gw != "" {
		gw, err := netip.ParseAddr(e.Gw)
		if err != nil {
			return nil, err
		}
		rt.Gw, rt.Scope = gw.AsSlice(), netlink.SCOPE_UNIVERSE
	}
	return rt, nil
}

func nlRule(e Entry) *netlink.Rule {
	r := netlink.NewRule()
	r.Family = unix.AF_INET
	if e.Family == 6 {
		r.Family = unix.AF_INET6
	}
	r.IifName = e.Name
	r.Table = e.Table
	r.Priority = e.Priority
	return r
}

func ipNet(p netip.Prefix) *net.IPNet {
	return &net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())}
}

// nsHandle opens a handle on namespace ns ("" = the host's; see Do).
func nsHandle(ns string) (netns.NsHandle, error) {
	if ns == "" {
		return netns.GetFromPath("/proc/self/ns/net")
	}
	return openNS(ns)
}

// withHandle runs f with a netlink handle whose sockets live in ns.
func withHandle(ns string, f func(h *netlink.Handle) error) error {
	nsh, err := nsHandle(ns)
	if err != nil {
		return err
	}
	defer nsh.Close()
	// NewHandleAt enters ns with setns (CAP_SYS_ADMIN) even when the
	// thread is already there; with only CAP_NET_ADMIN it must not.
	var h *netlink.Handle
	if isCurrent(nsh) {
		h, err = netlink.NewHandle()
	} else {
		h, err = netlink.NewHandleAt(nsh)
	}
	if err != nil {
		return fmt.Errorf("netsys: netlink in namespace %q: %w", ns, err)
	}
	defer h.Close()
	return f(h)
}

// isCurrent reports whether the calling thread is in namespace h. Threads
// that are not locked are all in the process's own namespace (Do discards
// a thread it cannot put back), so the answer holds for the caller.
func isCurrent(h netns.NsHandle) bool {
	cur, err := netns.Get()
	if err != nil {
		return false
	}
	defer cur.Close()
	return cur.Equal(h)
}
