package check

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/pi2hop/pi2hop/internal/roottest"
	"github.com/pi2hop/pi2hop/netsys"
)

// TestBoxFindings: a box namespace whose firewall drops forwarded packets
// as Docker, iptables or a plain nft table leaves it, and whose WAN has a
// tbf slower than pi2hop's rate: check --box names each with its fix.
func TestBoxFindings(t *testing.T) {
	roottest.Need(t, "ip", "nft")
	t.Parallel()
	j := netsys.NewJournal(nil)
	t.Cleanup(func() {
		if err := j.Undo(); err != nil {
			t.Errorf("removing the namespaces: %v", err)
		}
	})
	box, peer := roottest.Name("p2kb"), roottest.Name("p2kp")
	for _, ns := range []string{box, peer} {
		if err := j.NewNamespace(ns); err != nil {
			t.Fatal(err)
		}
	}
	if err := j.AddVeth(box, "bw", peer, "eth0"); err != nil {
		t.Fatal(err)
	}
	if err := j.AddVeth(box, "bl", peer, "eth1"); err != nil {
		t.Fatal(err)
	}
	if err := netsys.Do(box, func() error {
		l, err := netlink.LinkByName("bw")
		if err != nil {
			return err
		}
		// 5 Mbit/s: 625 000 bytes/s, a 10 kB bucket.
		return netlink.QdiscAdd(&netlink.Tbf{QdiscAttrs: netlink.QdiscAttrs{LinkIndex: l.Attrs().Index, Handle: netlink.MakeHandle(1, 0), Parent: netlink.HANDLE_ROOT},
			Rate: 625000, Limit: 100000, Buffer: 10000})
	}); err != nil {
		t.Fatal(err)
	}
	o := BoxOptions{NS: box, LAN: "bl", WAN: "bw", Rate: 10e6, WakeFor: 100 * time.Millisecond}
	find := func(fs []Finding, check string) []Finding {
		var out []Finding
		for _, f := range fs {
			if f.Check == check {
				out = append(out, f)
			}
		}
		return out
	}
	for _, c := range []struct {
		name, ruleset string
		status        string
		detail, fix   string
	}{
		{"no firewall", "", OK, "no forward chain drops by policy", ""},
		{"Docker", "table ip filter {\n\tchain FORWARD { type filter hook forward priority 0; policy drop; }\n\tchain DOCKER-USER { }\n}\n",
			Problem, "the ip filter table's FORWARD chain drops forwarded packets by policy (Docker's)",
			"iptables -I DOCKER-USER -i bl -o bw -j ACCEPT; iptables -I DOCKER-USER -i bw -o bl -j ACCEPT"},
		{"iptables", "table ip6 filter {\n\tchain FORWARD { type filter hook forward priority 0; policy drop; }\n}\n",
			Problem, "the ip6 filter table's FORWARD chain drops forwarded packets by policy (iptables)",
			"ip6tables -I FORWARD -i bl -o bw -j ACCEPT; ip6tables -I FORWARD -i bw -o bl -j ACCEPT"},
		{"nft", "table inet guard {\n\tchain fw { type filter hook forward priority 10; policy drop; }\n}\n",
			Problem, "the inet guard table's fw chain drops forwarded packets by policy",
			"nft insert rule inet guard fw iifname bl oifname bw accept; nft insert rule inet guard fw iifname bw oifname bl accept"},
	} {
		nft(t, box, "flush ruleset\n"+c.ruleset)
		var fs []Finding
		err := func() error {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			var err error
			fs, err = Box(ctx, o)
			return err
		}()
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		fw := find(fs, "firewall")
		if len(fw) != 1 || fw[0].Status != c.status || !strings.Contains(fw[0].Detail, c.detail) || fw[0].Fix != c.fix {
			t.Errorf("%s: firewall findings %+v\nwant one %s with %q, fix %q", c.name, fw, c.status, c.detail, c.fix)
		}
		if c.name != "no firewall" {
			continue
		}
		if q := find(fs, "wan qdisc"); len(q) != 1 || q[0].Status != Problem || !strings.Contains(q[0].Detail, "bw: tbf at 5Mbit, slower than pi2hop's 10Mbit") || q[0].Fix != "tc qdisc del dev bw root" {
			t.Errorf("wan qdisc findings %+v, want the 5 Mbit/s tbf named as slower, with its fix", q)
		}
		if f := find(fs, "forwarding"); len(f) != 1 || f[0].Status != Note {
			t.Errorf("forwarding findings %+v: want a note (a fresh namespace does not forward)", f)
		}
		if f := find(fs, "wake-up latency"); len(f) != 1 || !strings.Contains(f[0].Detail, "late") {
			t.Errorf("wake-up latency findings %+v", f)
		}
		if f := find(fs, "offloads"); len(f) != 2 {
			t.Errorf("offload findings %+v: want one per interface", f)
		}
	}
}
