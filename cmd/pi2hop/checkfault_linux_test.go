package main

import (
	"fmt"
	"net"
	"os/exec"
	"strings"
	"testing"

	"github.com/pi2hop/pi2hop/check"
	"github.com/pi2hop/pi2hop/internal/chainlab"
)

// faultChain is client ─ r1 ─ hop ─ r2 ─ server, five namespaces: two
// kernel routers with a pi2hop gateway between them, with chainlab's
// address plan (network 97: link i has 10.97.i.1/24 and fd97:i::1/64 on
// the left, .2 and ::2 on the right). A router's left device is "l", its
// right one "r", the hop's "rl" and "rw".
type faultChain struct {
	*chainlab.Chain
	nodes []string
}

const faultChainHop = 2 // the hop's node

// newFaultChain builds the chain, its namespaces named after prefix; the
// kernel routers forward, the hop's namespace forwards only once `pi2hop
// run` turns it on.
func newFaultChain(t *testing.T, prefix string) *faultChain {
	t.Helper()
	var nodes []string
	for k := range 5 {
		nodes = append(nodes, fmt.Sprintf("%s%c", prefix, "cahbs"[k]))
	}
	dev := func(k int, right bool) string {
		switch {
		case k == 0 || k == len(nodes)-1:
			return "eth0"
		case k == faultChainHop && right:
			return "rw" // the devices startGateway names
		case k == faultChainHop:
			return "rl"
		case right:
			return "r"
		}
		return "l"
	}
	lab := chainlab.New(t, chainlab.Spec{Nodes: nodes, Net: 97, Dev: dev, Forward: func(k int) bool { return k == 1 || k == 3 }})
	return &faultChain{Chain: lab, nodes: nodes}
}

// startHop runs `pi2hop run` in the hop's namespace between its two
// veths and waits for its control socket.
func (c *faultChain) startHop(t *testing.T, bin, name string, extra ...string) {
	t.Helper()
	l := &gatewayLab{router: c.nodes[faultChainHop]}
	t.Cleanup(func() { exec.Command("ip", "netns", "exec", l.router, bin, "run", "--cleanup", "--name", name).Run() })
	l.startGateway(t, bin, name, append([]string{"--rate", "100mbit"}, extra...)...)
}

// checkFaultCase is one fault the hop applies and what check must say of
// it.
type checkFaultCase struct {
	name     string
	fault    []string // pi2hop run's fault flags
	v6       bool     // check the server's IPv6 address
	fwd, rev string   // the ECN verdicts
	trace    bool     // also --trace, and name the hop whose quote changed
	// fromFar runs check from the server's end towards a responder in
	// the client's: forward is then the downlink.
	fromFar bool
	// The hop drops the trace's probes: the trace must end at the hop's
	// first answer.
	traceDropped bool
}

// TestCheckNamesHopFaults puts each ECN fault kind of the hop, in one
// direction, between two kernel routers, and checks that `pi2hop check
// --load=false` names it in that direction and "ECN passes" in the other.
// The expected verdicts follow from docs/ecn-faults.md's table and
// docs/check.md's: a fault that takes every probe of a codepoint shows
// in every probe. `before` and `after` do the same to check's probes (no
// queue builds and no AQM marks them), so the cases take one or the
// other, three kinds both. With --trace (three kinds, both ends of the
// chain) the hop must be named, by the address facing the checking end,
// as the first hop whose quote shows the change; a hop that drops the
// probes must end the trace. Measures no timing: parallel.
func TestCheckNamesHopFaults(t *testing.T) {
	needRoot(t, "ip")
	bin := buildPi2hop(t)
	P := check.Passes
	for i, tc := range []checkFaultCase{
		// First, as it takes longest: its trace waits a second on each
		// of five silent hops.
		{name: "drop-ect up", fault: []string{"--up-ecn-fault", "drop-ect,after"}, fwd: check.ECTDropped, rev: P, trace: true, traceDropped: true},
		{name: "no fault", fwd: P, rev: P},
		{name: "no fault over IPv6", v6: true, fwd: P, rev: P},
		{name: "bleach up", fault: []string{"--up-ecn-fault", "bleach"}, fwd: check.Bleached, rev: P},
		{name: "bleach up over IPv6", fault: []string{"--up-ecn-fault", "bleach,after"}, v6: true, fwd: check.Bleached, rev: P, trace: true},
		{name: "tos-zero down", fault: []string{"--down-ecn-fault", "tos-zero,after"}, fwd: P, rev: check.ToSZeroed},
		{name: "ect1-to-ect0 up", fault: []string{"--up-ecn-fault", "ect1-to-ect0,after"}, fwd: check.ECT1ToECT0, rev: P, trace: true},
		{name: "ect1-to-ect0 down over IPv6", fault: []string{"--down-ecn-fault", "ect1-to-ect0"}, v6: true, fwd: P, rev: check.ECT1ToECT0},
		// The downlink's fault traced from its own end: the gateway
		// answers from its WAN address, the way back to that end.
		{name: "ect1-to-ect0 down, traced from the server's end", fault: []string{"--down-ecn-fault", "ect1-to-ect0"}, fromFar: true,
			fwd: check.ECT1ToECT0, rev: P, trace: true},
		// ECT(0) made ECT(1): not a valid transition, and none of the
		// named ones.
		{name: "ect0-to-ect1 down", fault: []string{"--down-ecn-fault", "ect0-to-ect1"}, fwd: P, rev: check.Mangled},
		// CE probes leave the hop as ECT(1): they came as CE, so they had
		// no other codepoint at the hop.
		{name: "ce-bleach up", fault: []string{"--up-ecn-fault", "ce-bleach"}, fwd: check.CEBleached, rev: P, trace: true},
		// Every ECT probe CE: each alone is a valid mark, all of them
		// together are not an AQM.
		{name: "mangle down", fault: []string{"--down-ecn-fault", "mangle,after"}, fwd: P, rev: check.Mangled},
		{name: "drop-ect down", fault: []string{"--down-ecn-fault", "drop-ect"}, fwd: P, rev: check.ECTDropped},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			runCheckFaultCase(t, bin, testInstance(110+i), tc)
		})
	}
}

func runCheckFaultCase(t *testing.T, bin, name string, tc checkFaultCase) {
	c := newFaultChain(t, name)
	c.startHop(t, bin, name, tc.fault...)
	// along lists the nodes from the checking end: their addresses
	// facing it are those the trace sees.
	along := []int{0, 1, 2, 3, 4}
	facing := func(k int) string { return c.Addr(k-1, 2, tc.v6).String() }
	if tc.fromFar {
		along = []int{4, 3, 2, 1, 0}
		facing = func(k int) string { return c.Addr(k, 1, tc.v6).String() }
	}
	respond(t, bin, c.nodes[along[4]])

	to := net.JoinHostPort(facing(along[4]), fmt.Sprint(check.DefaultPort))
	args := []string{"netns", "exec", c.nodes[along[0]], bin, "check", "--to", to, "--probes", "5", "--every", "2ms", "--json", "--load=false"}
	if tc.trace {
		args = append(args, "--trace")
	}
	j, code := runCheckJSON(t, args...)
	if j.Forward.Verdict != tc.fwd || j.Reverse.Verdict != tc.rev {
		t.Errorf("ECN forward %q, reverse %q; want %q, %q", j.Forward.Verdict, j.Reverse.Verdict, tc.fwd, tc.rev)
	}
	want := 1
	if tc.fwd == check.Passes && tc.rev == check.Passes {
		want = 0
	}
	if code != want || j.Ready != (want == 0) {
		t.Errorf("exit status %d, ready %v; want %d (why: %s)", code, j.Ready, want, j.Why)
	}
	if !tc.trace {
		return
	}
	if j.Trace == nil {
		t.Fatalf("no trace in the output: %+v", j)
	}
	// The hop's namespace forwards each packet twice (rl to NAME-up,
	// then NAME-dn to rw; the other way round from the far end), its
	// kernel taking one off the TTL each time, so it answers as hops 2
	// and 3, both times from the address facing the checking end (the
	// route back to it leaves by that side). Hop 2 quotes the probe as
	// it arrived from the router before, ahead of the hop; hop 3 quotes
	// it as the hop wrote it into its other TUN, after the fault: the
	// first changed quote.
	hopAddr := facing(faultChainHop)
	type hop struct {
		addr             string
		changed, replied bool
	}
	if tc.traceDropped {
		// The probe the hop would let out at its second answer is
		// dropped inside it: silent from hop 3 on, until the trace gives
		// up after five.
		var got []string
		for _, h := range j.Trace.Hops {
			got = append(got, h.Address)
		}
		want := []string{facing(along[1]), hopAddr, "", "", "", "", ""}
		w := fmt.Sprintf("no probe got past hop 2 (%s)", hopAddr)
		if fmt.Sprint(got) != fmt.Sprint(want) || j.Trace.Reached || j.Trace.Changed != nil || !strings.Contains(j.Trace.Where, w) {
			t.Errorf("trace hops %q, reached %v, changed %+v, %q; want %q, not reached, none changed, %q",
				got, j.Trace.Reached, j.Trace.Changed, j.Trace.Where, want, w)
		}
		t.Logf("trace: %s", j.Trace.Where)
		return
	}
	wantHops := []hop{{facing(along[1]), false, false}, {hopAddr, false, false}, {hopAddr, true, false},
		{facing(along[3]), true, false}, {facing(along[4]), true, true}}
	var got []hop
	for _, h := range j.Trace.Hops {
		got = append(got, hop{h.Address, h.Saw != j.Trace.Sent, h.Responder})
	}
	if fmt.Sprint(got) != fmt.Sprint(wantHops) || !j.Trace.Reached {
		t.Errorf("trace hops (address, changed, responder) %v, reached %v; want %v", got, j.Trace.Reached, wantHops)
	}
	if ch := j.Trace.Changed; ch == nil || ch.Hop != 3 || ch.Address != hopAddr {
		t.Errorf("trace named %+v as the first changed hop, want hop 3 at %s", ch, hopAddr)
	}
	if w := fmt.Sprintf("inside %s, which answered as hop 2 with the field as sent and as hop 3 with it changed", hopAddr); !strings.Contains(j.Trace.Where, w) {
		t.Errorf("trace says %q, want it to say %q", j.Trace.Where, w)
	}
	t.Logf("trace: %s", j.Trace.Where)
}
