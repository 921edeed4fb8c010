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

	"github.com/pi2hop/pi2hop/internal/chainlab"
	"github.com/pi2hop/pi2hop/internal/roottest"
	"github.com/pi2hop/pi2hop/netsys"
)

// chain is client ─ r1 ─ … ─ rN ─ server, one namespace each, with the
// address plan of chainlab (network 98): node k's address on the link
// towards the client is 10.98.(k-1).2 and fd98:(k-1)::2, the client's
// 10.98.0.1 and fd98:0::1. The routers forward, with no ICMP rate limit,
// so a trace gets every time-exceeded it provokes.
type chain struct {
	*chainlab.Chain
	nodes []string // namespaces: client, routers, server
}

func (c *chain) client() string { return c.nodes[0] }
func (c *chain) server() string { return c.nodes[len(c.nodes)-1] }

// addr is node k's address on the link towards the client (k > 0) or, for
// the client, its only one.
func (c *chain) addr(k int, v6 bool) netip.Addr {
	if k == 0 {
		return c.Addr(0, 1, v6)
	}
	return c.Addr(k-1, 2, v6)
}

func newChain(t *testing.T, routers int) *chain {
	t.Helper()
	base := roottest.Name("p2k")
	var nodes []string
	for k := 0; k <= routers+1; k++ {
		nodes = append(nodes, fmt.Sprintf("%s-%d", base, k))
	}
	lab := chainlab.New(t, chainlab.Spec{Nodes: nodes, Net: 98, Forward: func(k int) bool { return k > 0 && k <= routers }})
	return &chain{Chain: lab, nodes: nodes}
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
