package netsys

import (
	"net/netip"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/pi2hop/pi2hop/internal/roottest"
)

// TestAcceptForward: a box whose IPv4 FORWARD chain drops by policy as
// Docker leaves it (with DOCKER-USER) and whose IPv6 one drops as plain
// ip6tables does forwards nothing; AcceptForward's rules let the device's
// traffic through, in DOCKER-USER and in the FORWARD chain itself, and
// Undo leaves the firewall as it was (dropping again, no rule of ours).
func TestAcceptForward(t *testing.T) {
	roottest.Need(t, "nft", "ip")
	t.Parallel()
	j := NewJournal(nil)
	t.Cleanup(func() { j.Undo() })
	n := newNATTopology(t, j)
	// inet routes the device's subnets back through the box: no NAT needed.
	for _, r := range []Route{
		{Dst: natDevAddr4.Masked(), Dev: "eth0", Gw: natWAN4.Addr()},
		{Dst: natDevAddr6.Masked(), Dev: "eth0", Gw: natWAN6.Addr()},
	} {
		if err := j.AddRoute(n.inet, r); err != nil {
			t.Fatal(err)
		}
	}
	reach := func(what string, want bool, timeout time.Duration) {
		t.Helper()
		for _, dst := range []netip.Addr{natInet4.Addr(), natInet6.Addr()} {
			_, err := seenFrom(t, n, dst, timeout)
			if (err == nil) != want {
				t.Errorf("%s: device to %v: %v, want reached %v", what, dst, err, want)
			}
		}
	}
	// The first connection waits out IPv6 duplicate address detection.
	reach("open box", true, 5*time.Second)
	ruleset := "table ip filter {\n\tchain DOCKER-USER {\n\t\treturn\n\t}\n\tchain FORWARD {\n\t\ttype filter hook forward priority 0; policy drop;\n\t\tjump DOCKER-USER\n\t}\n}\n" +
		"table ip6 filter {\n\tchain FORWARD {\n\t\ttype filter hook forward priority 0; policy drop;\n\t}\n}\n"
	cmd := exec.Command("ip", "netns", "exec", n.box, "nft", "-f", "-")
	cmd.Stdin = strings.NewReader(ruleset)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("nft: %v\n%s", err, out)
	}
	reach("forward policy drop", false, 500*time.Millisecond)

	acc := NewJournal(nil)
	got, err := acc.AcceptForward(n.box, "p2t-accept", [][2]string{{"lan0", n.wan}, {n.wan, "lan0"}})
	if err != nil {
		t.Fatal(err)
	}
	var where []string
	for _, f := range got {
		where = append(where, f.String())
	}
	if w := strings.Join(where, "; "); w != "chain DOCKER-USER of table ip filter; chain FORWARD of table ip6 filter" {
		t.Errorf("accept rules in %q, want Docker's DOCKER-USER for IPv4 and the ip6 FORWARD chain", w)
	}
	reach("with the accept rules", true, 500*time.Millisecond)
	if err := acc.Undo(); err != nil {
		t.Fatal(err)
	}
	reach("after undo", false, 500*time.Millisecond)
	out, err := exec.Command("ip", "netns", "exec", n.box, "nft", "list", "ruleset").CombinedOutput()
	if err != nil {
		t.Fatal(err)
	}
	if s := string(out); strings.Contains(s, "accept") || !strings.Contains(s, "policy drop") || !strings.Contains(s, "jump DOCKER-USER") {
		t.Errorf("ruleset after undo is not as it was:\n%s", s)
	}
}
