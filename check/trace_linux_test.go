package check

import (
	"context"
	"encoding/hex"
	"fmt"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/internal/roottest"
	"github.com/pi2hop/pi2hop/netsys"
)

// ICMP messages laid out by hand: a router at 10.0.0.1 tells 10.0.0.9
// that its probe from port 0x1234 to 10.0.0.2:9332 (0x2474), TOS 0x28
// (AF11, Not-ECT), timed out; and the same over IPv6 with traffic class
// 0x29 (AF11, ECT(1)), from fd00::9 to fd00::2.
func TestParseICMP(t *testing.T) {
	probe := hex.EncodeToString(appendMsg(nil, msg{typ: typeProbe, session: 0xaabbccdd, seq: 7})[:13])
	v4 := "45000038000000004001" + "0000" + "0a000001" + "0a000009" + // outer IPv4, proto ICMP
		"0b00" + "0000" + "00000000" + // time exceeded, TTL exceeded in transit
		"45280054000000000111" + "0000" + "0a000009" + "0a000002" + // quoted header: TOS 0x28, TTL 1, UDP
		"1234" + "2474" + "0048" + "0000" + probe
	v6 := "0300" + "0000" + "00000000" + // time exceeded (no outer header on an ICMPv6 raw socket)
		"62900000" + "00481101" + // version 6, traffic class 0x29, next header UDP, hop limit 1
		"fd000000000000000000000000000009" + "fd000000000000000000000000000002" +
		"1234" + "2474" + "0048" + "0000" + probe
	for _, c := range []struct {
		name     string
		hex      string
		v6       bool
		src, dst string
		tos      uint8
	}{
		{"IPv4", v4, false, "10.0.0.9:4660", "10.0.0.2:9332", 0x28},
		{"IPv6", v6, true, "[fd00::9]:4660", "[fd00::2]:9332", 0x29},
	} {
		b, _ := hex.DecodeString(c.hex)
		q, ok := parseICMP(b, c.v6)
		want := quote{src: netip.MustParseAddrPort(c.src), dst: netip.MustParseAddrPort(c.dst), tos: c.tos, hasSeq: true, session: 0xaabbccdd, seq: 7}
		if !ok || q != want {
			t.Errorf("%s: %+v, %v; want %+v", c.name, q, ok, want)
		}
		// Quotes cut to the 8 bytes of UDP header RFC 792 asks for still
		// name the ports, without the probe's sequence number.
		cut := len(b) - 13
		if q, ok := parseICMP(b[:cut], c.v6); !ok || q.hasSeq || q.dst != want.dst {
			t.Errorf("%s cut to the UDP header: %+v, %v", c.name, q, ok)
		}
		for _, n := range []int{0, 10, cut - 1} {
			if _, ok := parseICMP(b[:n], c.v6); ok {
				t.Errorf("%s cut to %d bytes: parsed", c.name, n)
			}
		}
	}
}

// TestTraceNamesHop: client ─ r1 ─ r2 ─ responder, r1 silent (it sends
// no time-exceeded), r2 rewriting ECT(1) to Not-ECT. With the rule where
// packets enter r2 (prerouting), r2's own quote shows the change: hop 2,
// r2's address. With it in r2's forward chain, after r2 quoted the probe,
// the responder is the first to see it: hop 3, after hop 2 (r2). IPv4
// and IPv6.
func TestTraceNamesHop(t *testing.T) {
	roottest.Need(t, "ip", "nft")
	t.Parallel()
	c := newChain(t, 2)
	c.respond(t)
	nft(t, c.nodes[1], "table inet p2ksilent {\n\tchain out {\n\t\ttype filter hook output priority 0; policy accept;\n\t\ticmp type time-exceeded drop\n\t\ticmpv6 type time-exceeded drop\n\t}\n}\n")
	for _, tc := range []struct {
		hook      string
		changedAt int
		responder bool
	}{{"prerouting", 2, false}, {"forward", 3, true}} {
		nft(t, c.nodes[2], fmt.Sprintf("table inet p2kfault\ndelete table inet p2kfault\ntable inet p2kfault {\n\tchain faults {\n\t\ttype filter hook %s priority 0; policy accept;\n\t\tiifname \"l\" meta nfproto ipv4 ip ecn ect1 ip ecn set not-ect\n\t\tiifname \"l\" meta nfproto ipv6 ip6 ecn ect1 ip6 ecn set not-ect\n\t}\n}\n", tc.hook))
		var wg sync.WaitGroup
		for _, v6 := range []bool{false, true} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				name := fmt.Sprintf("%s, IPv6 %v", tc.hook, v6)
				o := DefaultTraceOptions()
				o.Peer, o.Sent, o.Wait, o.MaxHops = netip.AddrPortFrom(c.addr(3, v6), DefaultPort), aqm.ECT1, 200*time.Millisecond, 6
				var tr *Trace
				err := netsys.Do(c.client(), func() error {
					ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
					defer cancel()
					var err error
					tr, err = RunTrace(ctx, o)
					return err
				})
				if err != nil {
					t.Errorf("%s: %v", name, err)
					return
				}
				var text strings.Builder
				tr.WriteText(&text)
				if len(tr.Hops) != 3 || !tr.Reached || !tr.Hops[0].Silent || tr.Hops[1].Addr != c.addr(2, v6) || tr.Hops[2].Addr != c.addr(3, v6) {
					t.Errorf("%s: want 3 hops, the first silent, then r2 %v and the responder %v:\n%s", name, c.addr(2, v6), c.addr(3, v6), text.String())
					return
				}
				if tr.Changed < 0 || tr.Hops[tr.Changed].N != tc.changedAt || tr.Hops[tr.Changed].ECN() != aqm.NotECT || tr.Hops[tr.Changed].Responder != tc.responder {
					t.Errorf("%s: want the change named at hop %d:\n%s", name, tc.changedAt, text.String())
				}
				if tc.changedAt == 3 && !strings.Contains(tr.Where(), fmt.Sprintf("after hop 2 (%v)", c.addr(2, v6))) {
					t.Errorf("%s: %q does not name hop 2 (%v) as the last that saw ECT(1)", name, tr.Where(), c.addr(2, v6))
				}
			}()
		}
		wg.Wait()
	}
}
