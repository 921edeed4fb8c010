package check

import (
	"fmt"
	"sync"
	"testing"

	"github.com/pi2hop/pi2hop/internal/roottest"
)

// TestPathFaults: a router between client and responder rewrites the ECN
// field with an nft rule in its forward chain, in one direction (by input
// device: l is the client's side, r the server's); check names the fault
// in that direction and ECN passes in the other, over IPv4 and IPv6.
func TestPathFaults(t *testing.T) {
	roottest.Need(t, "ip", "nft")
	t.Parallel()
	c := newChain(t, 1)
	c.respond(t)
	router := c.nodes[1]
	for _, tc := range []struct {
		name     string
		in       string // the router's input device the rule matches
		v4, v6   string // the rule's match and statements
		fwd, rev string // verdicts
	}{
		{"none", "", "", "", Passes, Passes},
		{"bleach towards the responder", "l", "ip ecn set not-ect", "ip6 ecn set not-ect", Bleached, Passes},
		{"ECT(1) to ECT(0) towards the client", "r", "ip ecn ect1 ip ecn set ect0", "ip6 ecn ect1 ip6 ecn set ect0", Passes, ECT1ToECT0},
		{"CE to ECT(0) towards the responder", "l", "ip ecn ce ip ecn set ect0", "ip6 ecn ce ip6 ecn set ect0", CEBleached, Passes},
		{"ECT(1) dropped towards the client", "r", "ip ecn ect1 drop", "ip6 ecn ect1 drop", Passes, ECTDropped},
		{"ToS zeroed towards the responder", "l", "ip dscp set cs0 ip ecn set not-ect", "ip6 dscp set cs0 ip6 ecn set not-ect", ToSZeroed, Passes},
		{"Not-ECT made ECT(0) towards the client", "r", "ip ecn not-ect ip ecn set ect0", "ip6 ecn not-ect ip6 ecn set ect0", Passes, Mangled},
	} {
		rules := ""
		if tc.in != "" {
			rules = fmt.Sprintf("iifname %q meta nfproto ipv4 %s\n\t\tiifname %q meta nfproto ipv6 %s\n", tc.in, tc.v4, tc.in, tc.v6)
		}
		nft(t, router, fmt.Sprintf("table inet p2kfault\ndelete table inet p2kfault\ntable inet p2kfault {\n\tchain faults {\n\t\ttype filter hook forward priority 0; policy accept;\n\t\t%s\t}\n}\n", rules))
		var wg sync.WaitGroup
		for _, v6 := range []bool{false, true} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r, err := c.path(t, v6)
				if err != nil {
					t.Errorf("%s, IPv6 %v: %v", tc.name, v6, err)
					return
				}
				if r.Forward.Verdict.Kind != tc.fwd || r.Reverse.Verdict.Kind != tc.rev {
					t.Errorf("%s, IPv6 %v: forward %q %v, reverse %q %v; want %q, %q",
						tc.name, v6, r.Forward.Verdict.Kind, r.Forward.Verdict.Faults, r.Reverse.Verdict.Kind, r.Reverse.Verdict.Faults, tc.fwd, tc.rev)
				}
				// One router: TTL one less than sent, both ways.
				if r.Forward.Table.TTLMin != 63 || r.Reverse.Table.TTLMin != 63 {
					t.Errorf("%s, IPv6 %v: TTL %d at the responder, %d back; want 63 (one router)", tc.name, v6, r.Forward.Table.TTLMin, r.Reverse.Table.TTLMin)
				}
			}()
		}
		wg.Wait()
	}
}
