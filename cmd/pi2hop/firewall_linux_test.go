package main

import (
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestGatewayFirewallAccept: a router whose forward chains drop by policy
// as Docker leaves them (IPv4, with DOCKER-USER) and as plain ip6tables
// does (IPv6) forwards nothing; `pi2hop run` with its default
// --firewall-accept forwards anyway, says so at start, and leaves the
// ruleset as it was after SIGTERM, and after SIGKILL and --cleanup.
func TestGatewayFirewallAccept(t *testing.T) {
	needRoot(t, "ip", "nft")
	t.Parallel()
	bin := buildPi2hop(t)
	name := testInstance(77)
	l := newGatewayLab(t, name)
	t.Cleanup(func() { exec.Command("ip", "netns", "exec", l.router, bin, "run", "--cleanup", "--name", name).Run() })
	nftIn := func(args ...string) string {
		t.Helper()
		out, err := exec.Command("ip", append([]string{"netns", "exec", l.router, "nft"}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("nft %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	dropForwarding(t, l.router)
	before := nftIn("list", "ruleset")

	start := func() (*exec.Cmd, *lockedBuffer) {
		t.Helper()
		return startInstance(t, bin, l.router, name, 10*time.Second, "", "run", "--name", name, "--lan", "rl", "--wan", "rw")
	}
	cmd, stderr := start()
	if got := sendTCP(t, l.client, l.server, "tcp", "10.254.20.2:5008", 64<<10, 5*time.Second); got != 64<<10 {
		t.Errorf("IPv4 through the gateway past Docker's FORWARD policy: %d of %d bytes", got, 64<<10)
	}
	if got := l.transfer6(t, 64<<10); got != 64<<10 {
		t.Errorf("IPv6 through the gateway past ip6tables' FORWARD policy: %d of %d bytes", got, 64<<10)
	}
	for _, want := range []string{"firewall: forwarding accepted in ", "chain DOCKER-USER of table ip filter", "chain FORWARD of table ip6 filter"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("start-up output does not say %q:\n%s", want, stderr.String())
		}
	}
	cmd.Process.Signal(syscall.SIGTERM)
	if err := waitExit(t, cmd, 10*time.Second); err != nil {
		t.Errorf("pi2hop run after SIGTERM: %v", err)
	}
	if after := nftIn("list", "ruleset"); after != before {
		t.Errorf("ruleset after SIGTERM:\n%s\nwant as before:\n%s", after, before)
	}

	cmd, _ = start()
	cmd.Process.Kill()
	waitExit(t, cmd, 10*time.Second)
	if left := nftIn("list", "ruleset"); left == before {
		t.Errorf("SIGKILL left the accept rules out: the test proves nothing")
	}
	if out, err := exec.Command("ip", "netns", "exec", l.router, bin, "run", "--cleanup", "--name", name).CombinedOutput(); err != nil {
		t.Fatalf("run --cleanup: %v\n%s", err, out)
	}
	if after := nftIn("list", "ruleset"); after != before {
		t.Errorf("ruleset after SIGKILL and --cleanup:\n%s\nwant as before:\n%s", after, before)
	}
}

// dropForwarding makes namespace ns's firewall drop forwarded packets by
// policy, as Docker leaves it (table ip filter: FORWARD drops and jumps
// to an empty DOCKER-USER) and as plain ip6tables does (table ip6
// filter: FORWARD drops).
func dropForwarding(t *testing.T, ns string) {
	t.Helper()
	cmd := exec.Command("ip", "netns", "exec", ns, "nft", "-f", "-")
	cmd.Stdin = strings.NewReader("table ip filter {\n\tchain DOCKER-USER {\n\t\treturn\n\t}\n\tchain FORWARD {\n\t\ttype filter hook forward priority 0; policy drop;\n\t\tjump DOCKER-USER\n\t}\n}\n" +
		"table ip6 filter {\n\tchain FORWARD {\n\t\ttype filter hook forward priority 0; policy drop;\n\t}\n}\n")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("nft -f - in %s: %v\n%s", ns, err, out)
	}
}
