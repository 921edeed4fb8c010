// Package chainlab builds, for root tests, a chain of network namespaces
// joined by veth pairs: client ─ node 1 ─ … ─ server. Link i joins node i
// and node i+1 (the client is node 0), with 10.N.i.1/24 and fdN:i::1/64 on
// its left end and .2 and ::2 on its right one, N the chain's network
// number, so chains of different numbers run side by side. Every node
// routes each link it is not on towards it, and ICMP errors are not rate
// limited, so that a trace gets every time-exceeded it provokes.
package chainlab

import (
	"fmt"
	"net/netip"
	"testing"

	"github.com/pi2hop/pi2hop/netsys"
)

// Spec describes a chain.
type Spec struct {
	Nodes []string // namespace names, the client first, the server last
	Net   int      // network number: 10.Net.0.0/16, fdNet::/16
	// Forward says whether node k forwards (a kernel router); a node
	// that does not may turn it on itself (a pi2hop gateway).
	Forward func(k int) bool
	// Dev names node k's device towards its right (right) or left
	// neighbour; nil: eth0 at the ends, "l" and "r" between.
	Dev func(k int, right bool) string
}

// Chain is a built chain.
type Chain struct {
	Nodes []string
	net   int
}

// Addr is the address of link's end host (1 left, 2 right; 0 the
// link's network).
func (c *Chain) Addr(link, host int, v6 bool) netip.Addr {
	if v6 {
		return netip.MustParseAddr(fmt.Sprintf("fd%d:%d::%d", c.net, link, host))
	}
	return netip.MustParseAddr(fmt.Sprintf("10.%d.%d.%d", c.net, link, host))
}

// New builds the chain s describes and removes it when t ends.
func New(t testing.TB, s Spec) *Chain {
	t.Helper()
	j := netsys.NewJournal(nil)
	t.Cleanup(func() {
		if err := j.Undo(); err != nil {
			t.Errorf("removing the chain: %v", err)
		}
	})
	c := &Chain{Nodes: s.Nodes, net: s.Net}
	last := len(c.Nodes) - 1
	dev := s.Dev
	if dev == nil {
		dev = func(k int, right bool) string {
			switch {
			case k == 0 || k == last:
				return "eth0"
			case right:
				return "r"
			}
			return "l"
		}
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	for k, ns := range c.Nodes {
		must(j.NewNamespace(ns))
		for _, key := range []string{"net/ipv6/conf/all/accept_dad", "net/ipv6/conf/default/accept_dad",
			"net/ipv4/icmp_ratelimit", "net/ipv6/icmp/ratelimit"} {
			must(netsys.WriteSysctl(ns, key, "0"))
		}
		if s.Forward != nil && s.Forward(k) {
			must(j.SetSysctl(ns, "net/ipv4/ip_forward", "1"))
			must(j.SetSysctl(ns, "net/ipv6/conf/all/forwarding", "1"))
		}
	}
	bits := func(v6 bool) int {
		if v6 {
			return 64
		}
		return 24
	}
	for i := 0; i < last; i++ {
		must(j.AddVeth(c.Nodes[i], dev(i, true), c.Nodes[i+1], dev(i+1, false)))
		for _, v6 := range []bool{false, true} {
			must(j.AddAddr(c.Nodes[i], dev(i, true), netip.PrefixFrom(c.Addr(i, 1, v6), bits(v6))))
			must(j.AddAddr(c.Nodes[i+1], dev(i+1, false), netip.PrefixFrom(c.Addr(i, 2, v6), bits(v6))))
		}
	}
	// Left links through the left neighbour, right ones through the
	// right one.
	for k := range c.Nodes {
		for link := 0; link < last; link++ {
			if link == k || link == k-1 {
				continue
			}
			for _, v6 := range []bool{false, true} {
				gw, d := c.Addr(k, 2, v6), dev(k, true)
				if link < k {
					gw, d = c.Addr(k-1, 1, v6), dev(k, false)
				}
				must(j.AddRoute(c.Nodes[k], netsys.Route{Dst: netip.PrefixFrom(c.Addr(link, 0, v6), bits(v6)).Masked(), Dev: d, Gw: gw}))
			}
		}
	}
	return c
}
