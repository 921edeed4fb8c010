package check

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/pi2hop/pi2hop/internal/roottest"
	"github.com/pi2hop/pi2hop/netsys"
)

// chain is client ─ r1 ─ … ─ rN ─ server, one namespace each. Link i
// joins node i and node i+1 (the client is node 0): 10.98.i.1/24 and
// fd98:i::1/64 on the left, .2 and ::2 on the right; each router's left
// device is "l", its right one "r". Routers forward, with no ICMP rate
// limit, so a trace gets every time-exceeded it provokes.
type chain struct {
	nodes []string // namespaces: client, routers, server
}

func (c *chain) client() string { return c.nodes[0] }
func (c *chain) server() string { return c.nodes[len(c.nodes)-1] }

// addr is node k's address on the link towards the client (k > 0) or, for
// the client, its only one.
func (c *chain) addr(k int, v6 bool) netip.Addr {
	if k == 0 {
		return linkAddr(0, 1, v6)
	}
	return linkAddr(k-1, 2, v6)
}

func linkAddr(link, host int, v6 bool) netip.Addr {
	if v6 {
		return netip.MustParseAddr(fmt.Sprintf("fd98:%d::%d", link, host))
	}
	return netip.MustParseAddr(fmt.Sprintf("10.98.%d.%d", link, host))
}

func newChain(t *testing.T, routers int) *chain {
	t.Helper()
	j := netsys.NewJournal(nil)
	t.Cleanup(func() {
		if err := j.Undo(); err != nil {
			t.Errorf("removing the chain: %v", err)
		}
	})
	base := roottest.Name("p2k")
	c := &chain{}
	for k := 0; k <= routers+1; k++ {
		c.nodes = append(c.nodes, fmt.Sprintf("%s-%d", base, k))
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	for k, ns := range c.nodes {
		must(j.NewNamespace(ns))
		for _, s := range []string{"net/ipv6/conf/all/accept_dad", "net/ipv6/conf/default/accept_dad",
			"net/ipv4/icmp_ratelimit", "net/ipv6/icmp/ratelimit"} {
			must(netsys.WriteSysctl(ns, s, "0"))
		}
		if k > 0 && k <= routers {
			must(j.SetSysctl(ns, "net/ipv4/ip_forward", "1"))
			must(j.SetSysctl(ns, "net/ipv6/conf/all/forwarding", "1"))
		}
	}
	dev := func(k int, right bool) string {
		switch {
		case k == 0 || k == len(c.nodes)-1:
			return "eth0"
		case right:
			return "r"
		}
		return "l"
	}
	last := len(c.nodes) - 1
	for i := 0; i < last; i++ {
		must(j.AddVeth(c.nodes[i], dev(i, true), c.nodes[i+1], dev(i+1, false)))
		for _, v6 := range []bool{false, true} {
			bits := 24
			if v6 {
				bits = 64
			}
			must(j.AddAddr(c.nodes[i], dev(i, true), netip.PrefixFrom(linkAddr(i, 1, v6), bits)))
			must(j.AddAddr(c.nodes[i+1], dev(i+1, false), netip.PrefixFrom(linkAddr(i, 2, v6), bits)))
		}
	}
	// Every node routes each link it is not on towards it: left links
	// through its left neighbour, right ones through its right one.
	for k := range c.nodes {
		for link := 0; link < last; link++ {
			if link == k || link == k-1 {
				continue
			}
			for _, v6 := range []bool{false, true} {
				bits := 24
				gw, d := linkAddr(k, 2, v6), dev(k, true)
				if link < k {
					gw, d = linkAddr(k-1, 1, v6), dev(k, false)
				}
				if v6 {
					bits = 64
				}
				must(j.AddRoute(c.nodes[k], netsys.Route{Dst: netip.PrefixFrom(linkAddr(link, 0, v6), bits).Masked(), Dev: d, Gw: gw}))
			}
		}
	}
	return c
}

// nft loads ruleset into namespace ns.
func nft(t *testing.T, ns, ruleset string) {
	t.Helper()
	cmd := exec.Command("ip", "netns", "exec", ns, "nft", "-f", "-")
	cmd.Stdin = strings.NewReader(ruleset)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("nft in %s: %v\n%s\n%s", ns, err, out, ruleset)
	}
}

// respond runs a responder in the chain's server namespace on port 9332
// of every address, until the test ends.
func (c *chain) respond(t *testing.T) {
	t.Helper()
	var conn *net.UDPConn
	if err := netsys.Do(c.server(), func() error {
		var err error
		conn, err = net.ListenUDP("udp", &net.UDPAddr{Port: DefaultPort})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	r, err := NewResponder(conn)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); r.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(2 * time.Second):
			t.Error("responder still serving 2 s after its context ended")
		}
		conn.Close()
	})
}

// path runs the path check from the chain's client to the server's
// address of family v6.
func (c *chain) path(t *testing.T, v6 bool) (*Result, error) {
	opts := DefaultOptions()
	opts.Target = netip.AddrPortFrom(c.addr(len(c.nodes)-1, v6), DefaultPort).String()
	opts.Probes, opts.Interval, opts.Load = 5, time.Millisecond, false
	var r *Result
	err := netsys.Do(c.client(), func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		var err error
		r, err = Path(ctx, opts)
		return err
	})
	return r, err
}
