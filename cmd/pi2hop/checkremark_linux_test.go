package main

import (
	"fmt"
	"net"
	"os/exec"
	"strings"
	"testing"

	"github.com/pi2hop/pi2hop/check"
)

// TestCheckRemarkedDuringLoad: a kernel router upstream of a DualPI2 hop
// re-marks ECT(1) to ECT(0), but only the load's packets (an nft rule on
// traffic from the client to any port but the responder's, so the
// transitions pass and the fault appears with the load). The L4S flow
// then reaches DualPI2 as ECT(0) and is treated as classic: without the
// responder's count, check would call the bottleneck a single queue. It
// must name the re-marking during the load instead, withhold the
// bottleneck verdict, and exit 1.
func TestCheckRemarkedDuringLoad(t *testing.T) {
	needRoot(t, "ip", "nft")
	bin := buildPi2hop(t)
	name := testInstance(130)
	c := newFaultChain(t, name)
	l := &gatewayLab{router: c.nodes[faultChainHop]}
	t.Cleanup(func() { exec.Command("ip", "netns", "exec", l.router, bin, "run", "--cleanup", "--name", name).Run() })
	l.startGateway(t, bin, name, "--rate", "10mbit", "--delay", "2ms")
	rule := fmt.Sprintf(`table ip remark {
	chain forward {
		type filter hook forward priority 0; policy accept;
		iifname "l" udp dport != %d ip ecn ect1 ip ecn set ect0
	}
}
`, check.DefaultPort)
	nft := exec.Command("ip", "netns", "exec", c.nodes[1], "nft", "-f", "-")
	nft.Stdin = strings.NewReader(rule)
	if out, err := nft.CombinedOutput(); err != nil {
		t.Fatalf("nft: %v: %s", err, out)
	}
	respond(t, bin, c.nodes[4])

	to := net.JoinHostPort(c.Addr(3, 2, false).String(), fmt.Sprint(check.DefaultPort))
	j, code := runCheckJSON(t, "netns", "exec", c.nodes[0], bin, "check", "--to", to, "--probes", "5", "--every", "2ms",
		"--duration", "2s", "--json")
	if j.Forward.Verdict != check.Passes || j.Reverse.Verdict != check.Passes {
		t.Errorf("transitions: forward %q, reverse %q; want both to pass (the rule spares them)", j.Forward.Verdict, j.Reverse.Verdict)
	}
	ld := j.Load
	if ld == nil {
		t.Fatalf("check exit %d: no load result", code)
	}
	t.Logf("exit %d: %s: %s; L4S arrived %v, probes %v; why: %s", code, ld.Verdict, ld.Detail, ld.L4S.Arrived, ld.L4S.ProbesThere, j.Why)
	if ld.Verdict != check.ChangedUnderLoad || strings.Contains(ld.Verdict+ld.Detail+j.Why, check.SingleQueue) {
		t.Errorf("bottleneck %q (%s): want %q, and no %q", ld.Verdict, ld.Detail, check.ChangedUnderLoad, check.SingleQueue)
	}
	if !strings.Contains(ld.Detail, "ECT(1) arrived as ECT(0) for ") || !strings.Contains(ld.Detail, " packets during the load: re-marked on the path") {
		t.Errorf("detail %q does not name the L4S flow's re-marking during the load", ld.Detail)
	}
	// Every load packet met the rule: none arrived ECT(1) (CE marks of
	// ECT(0) at the hop are valid and may show).
	if ld.L4S.Arrived["ECT(0)"] == 0 || ld.L4S.Arrived["ECT(1)"] != 0 || ld.L4S.ProbesThere["ECT(0)"] == 0 {
		t.Errorf("L4S flow arrived %v, its probes %v: want ECT(0), no ECT(1)", ld.L4S.Arrived, ld.L4S.ProbesThere)
	}
	if code != 1 || j.Ready || ld.Ready {
		t.Errorf("exit status %d, ready %v (load %v); want 1, not ready", code, j.Ready, ld.Ready)
	}
}
