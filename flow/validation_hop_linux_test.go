package flow

import (
	"fmt"
	"net"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pi2hop/pi2hop/flow/prague"
	"github.com/pi2hop/pi2hop/internal/hoststeal"
)

// Live, through the hop between two namespaces (the Pair that pi2hop
// shell builds) at 10 Mbit/s and a 20 ms RTT: a kernel nftables rule in
// the server's namespace rewrites the ECN field of each flow's packets
// as they arrive, after the hop (a middlebox downstream of the
// bottleneck), and the Prague sender's validation names the fault within
// its test period (the first 10 packets and their ACKs: 0.15 s at the
// starting rate, 12 ms a packet, and a 20 ms RTT; ect-dropped takes five
// more rounds of one ECT packet and an RTT; the bound, 1 s, allows for a
// busy machine's stalls, and is widened by the host's steal meanwhile,
// which can stop the sender or the hop for as long: internal/hoststeal):
// not-ect is bleached, ect0 re-marked, ce mangled, a rule that drops ECT
// packets ect-dropped; the flow without a rule stays ECT(1) beside them.
// A sender that heard nothing for its timeout while its window was full
// (SenderSummary.Timeouts) restarts from one full packet at the minimum
// rate and re-tests (prague.Validator.Stalled): ect-dropped then also
// waits that timeout and six rounds, each at least one packet of
// DefaultMTU bytes at MinRate (112 ms). Five flows at once, 3 s each.
func TestValidationThroughHop(t *testing.T) {
	t.Parallel()
	p := hopPairNamed(t, "p2v", 10_000_000, 10*time.Millisecond)
	tests := []struct {
		name, rule, reason string
	}{
		{"none", "", ""},
		{"bleach", "ip ecn set not-ect", "bleached"},
		{"ect1-to-ect0", "ip ecn set ect0", "re-marked"},
		{"mangle", "ip ecn set ce", "mangled"},
		{"drop-ect", "ip ecn != not-ect drop", "ect-dropped"},
	}
	type result struct {
		ss       SenderSummary
		rs       ReceiverSummary
		err, rer error
	}
	res := make([]result, len(tests))
	var rules strings.Builder
	type socks struct{ tx, rx *net.UDPConn }
	conns := make([]socks, len(tests))
	for i, tc := range tests {
		conns[i] = socks{listenIn(t, p.InClient, p.ClientAddr), listenIn(t, p.InServer, p.ServerAddr)}
		if tc.rule != "" {
			fmt.Fprintf(&rules, "\t\tudp dport %d %s\n", addrOf(conns[i].rx).Port(), tc.rule)
		}
	}
	// The namespace goes with the pair, and the table with it.
	table := "table ip pi2hop-test-ecn {\n\tchain pre {\n\t\ttype filter hook prerouting priority raw; policy accept;\n" + rules.String() + "\t}\n}\n"
	nft := exec.Command("ip", "netns", "exec", p.ServerNS, "nft", "-f", "-")
	nft.Stdin = strings.NewReader(table)
	if out, err := nft.CombinedOutput(); err != nil {
		t.Fatalf("nft -f in %s: %v: %s\n%s", p.ServerNS, err, out, table)
	}
	steal0 := hoststeal.Total()
	var wg sync.WaitGroup
	for i := range tests {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := &res[i]
			r.ss, r.rs, r.err, r.rer = runPairOn(conns[i].tx, conns[i].rx, PragueConfig{Duration: 3 * time.Second}, PragueConfig{})
		}()
	}
	wg.Wait()
	bound := time.Second
	if s1 := hoststeal.Total(); steal0 >= 0 && s1 >= 0 {
		bound += s1 - steal0
	}
	for i, tc := range tests {
		r := res[i]
		if r.err != nil || r.rer != nil {
			t.Errorf("%s: send: %v, receive: %v", tc.name, r.err, r.rer)
			continue
		}
		v := r.ss.Validation
		t.Logf("%-12s sent %d, goodput %.2f Mbit/s, ECN %s, validation %s %q at %v, %d timeouts; receiver: ECT(1) %d, ECT(0) %d, CE %d, Not-ECT %d, lost %d",
			tc.name, r.ss.PacketsSent, r.ss.GoodputBps/1e6, r.ss.ECN, v.State, v.Failed, v.At, r.ss.Timeouts, r.rs.ECT1, r.rs.ECT0, r.rs.CE, r.rs.NotECT, r.rs.Lost)
		if tc.reason == "" {
			if v.State != "capable" || r.ss.FellBack || r.ss.ECN != "ECT(1)" {
				t.Errorf("%s: validation %s %q, fell back %v, ECN %s; want capable, ECT(1) throughout", tc.name, v.State, v.Failed, r.ss.FellBack, r.ss.ECN)
			}
			continue
		}
		if v.Failed != tc.reason || !r.ss.FellBack || r.ss.ECN != "Not-ECT" {
			t.Errorf("%s: validation %s %q, fell back %v, ECN %s; want failed %q, Not-ECT", tc.name, v.State, v.Failed, r.ss.FellBack, r.ss.ECN, tc.reason)
		}
		within := bound
		if tc.reason == "ect-dropped" && r.ss.Timeouts > 0 {
			within += prague.TimeoutAfter*time.Microsecond + 6*time.Duration(prague.DefaultMTU/prague.MinRate*float64(time.Second))
		}
		if v.At <= 0 || v.At > within {
			t.Errorf("%s: failed at %v after %d timeouts, want within the test period (1 s, %v with the host's steal and the sender's timeout)", tc.name, v.At, r.ss.Timeouts, within)
		}
	}
}
