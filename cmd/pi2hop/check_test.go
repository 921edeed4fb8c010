package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/check"
	"github.com/pi2hop/pi2hop/flow/ecnudp"
	"github.com/pi2hop/pi2hop/flow/ecnudp/ecnudptest"
)

// checkResponder runs `check --serve` in-process on a free loopback port
// and returns its address.
func checkResponder(t *testing.T) string {
	t.Helper()
	ecnudptest.Need(t)
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	addr := c.LocalAddr().String()
	c.Close()
	ctx, cancel := context.WithCancel(context.Background())
	var out lockedBuffer
	done := make(chan error, 1)
	go func() { done <- Run(ctx, []string{"check", "--serve", addr}, nil, &out, &out) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("check --serve: %v", err)
			}
		case <-time.After(2 * time.Second):
			t.Error("check --serve still running 2 s after its context ended")
		}
	})
	deadline := time.Now().Add(2 * time.Second)
	for !strings.Contains(out.String(), "answering on "+addr) {
		if time.Now().After(deadline) {
			t.Fatalf("check --serve did not say it answers on %s within 2 s: %q", addr, out.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	return addr
}

func TestCheckCommand(t *testing.T) {
	addr := checkResponder(t)
	out, err := runCLI(t, "", "check", "--to", addr, "--probes", "3", "--every", "1ms", "--load=false")
	if err != nil {
		t.Fatalf("check over loopback: %v\n%s", err, out)
	}
	for _, want := range []string{"client → responder: ECN passes", "responder → client: ECN passes", "ECT(1)   0/3   ECT(1) 3", "L4S-ready: yes"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	out, err = runCLI(t, "", "check", "--to", addr, "--probes", "2", "--every", "1ms", "--json", "--load=false")
	if err != nil {
		t.Fatal(err)
	}
	var j check.JSON
	if err := json.Unmarshal([]byte(out), &j); err != nil {
		t.Fatalf("--json output %q: %v", out, err)
	}
	if !j.Ready || j.Forward.Verdict != check.Passes || j.Reverse.Verdict != check.Passes || j.Peer != addr ||
		len(j.Forward.Codepoints) != 4 || j.Forward.Codepoints[2].Sent != "ECT(1)" || j.Forward.Codepoints[2].Arrived["ECT(1)"] != 2 {
		t.Errorf("--json: %s", out)
	}
}

// Usage errors exit 2 with a hint; a closed port exits 2 at once with
// the address.
func TestCheckCommandErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"check"}, "want --to HOST[:PORT]"},
		{[]string{"check", "--to", "a", "--serve", ":1"}, "give one"},
		{[]string{"check", "--serve", "nowhere"}, "want [ADDR]:PORT"},
		{[]string{"check", "--to", "[::1"}, "want HOST[:PORT]"},
		{[]string{"check", "--to", "h:0"}, "want HOST[:PORT]"},
		{[]string{"check", "--to", "h", "--probes", "0"}, "--probes"},
		{[]string{"check", "--to", "h", "extra"}, "unexpected argument"},
		{[]string{"check", "--serve", ":1", "--trace"}, "--trace goes with --to"},
		{[]string{"check", "--to", "h", "--wan", "eth0"}, "go with --box"},
		{[]string{"check", "--box", "--serve", ":1"}, "give one of"},
		{[]string{"check", "--to", "h", "--max-rate", "500kbit"}, "--max-rate 500kbit: want at least 1mbit"},
		{[]string{"check", "--to", "h", "--max-rate", "10"}, "give a unit"},
		{[]string{"check", "--to", "h", "--duration", "2m"}, "--duration 2m0s: want at most 1m0s"},
		{[]string{"check", "--to", "h", "--duration", "0.5s"}, "must be at least 1s"},
		{[]string{"check", "--to", "h", "--load=false", "--duration", "2s"}, "go with --to and --load"},
		{[]string{"check", "--serve", ":1", "--max-rate", "10mbit"}, "go with --to and --load"},
	} {
		_, err := runCLI(t, "", c.args...)
		var ue *usageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want a usage error with %q", c.args, err, c.want)
		}
	}
	if !ecnudp.Supported {
		return
	}
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	closed := c.LocalAddr().String()
	c.Close()
	var stdout, stderr bytes.Buffer
	start := time.Now()
	err = Run(context.Background(), []string{"check", "--to", closed}, nil, &stdout, &stderr)
	if code := exitCode(err, &stderr); code != 2 || !strings.Contains(stderr.String(), closed) {
		t.Errorf("check --to a closed port: exit %d, stderr %q; want 2 naming %s", code, stderr.String(), closed)
	}
	if el := time.Since(start); el > 5*time.Second {
		t.Errorf("closed port reported after %v, want within 5 s", el)
	}
}

// TestCheckJSONMatchesDocs: check's JSON outputs (the path check with a
// fault and its trace, and --box's) against docs/json.md.
func TestCheckJSONMatchesDocs(t *testing.T) {
	schema := readSchema(t)
	var tb check.Table
	for _, s := range []aqm.ECN{aqm.NotECT, aqm.ECT0, aqm.ECT1, aqm.CE} {
		tb.Sent[s], tb.Arrived[s][s] = 5, 5
	}
	bleached := tb
	bleached.Arrived[aqm.ECT1] = [4]int{aqm.NotECT: 5}
	r := &check.Result{Target: "far.example.net", Peer: netip.MustParseAddrPort("192.0.2.7:9332"), Probes: 5, RTT: time.Millisecond,
		Forward: check.Direction{Table: bleached, Verdict: check.Judge(bleached)},
		Reverse: check.Direction{Table: tb, Verdict: check.Judge(tb), Partial: true}}
	r.Forward.Table.TTLMin, r.Forward.Table.TTLMax = 61, 62
	j := r.JSON()
	tr := &check.Trace{Peer: r.Peer, Sent: aqm.ECT1, Reached: true, Changed: 1, Hops: []check.Hop{
		{N: 1, Silent: true}, {N: 2, Addr: r.Peer.Addr(), Responder: true, TOS: 0x28, RTT: time.Millisecond}}}
	tj := tr.JSON()
	j.Trace = &tj
	lf := check.LoadFigures{MaxRate: 100e6, Base: time.Millisecond, L4SP50: 2 * time.Millisecond, L4SP99: 3 * time.Millisecond,
		ClassicP50: 16 * time.Millisecond, ClassicP99: 20 * time.Millisecond, L4SProbes: 300, ClassicProbes: 300, L4SCE: 0.2, L4SGoodput: 5e6, CGoodput: 5e6}
	// The responder's count, with the classic flow re-marked: path_faults.
	lf.ArrivedKnown, lf.Arrived = true, [2][4]int{{0, 900, 0, 100}, {400, 100, 0, 0}}
	r.Load = &check.Load{Duration: 5 * time.Second, MaxRate: 100e6, Figures: lf, Verdict: check.CrossCheck(check.Classify(lf), lf)}
	j = r.JSON()
	j.Trace = &tj
	clean := (&check.Result{Forward: check.Direction{Table: tb, Verdict: check.Judge(tb)}, Reverse: check.Direction{Table: tb, Verdict: check.Judge(tb)}}).JSON()
	box := check.BoxJSON{Problems: 1, Findings: []check.Finding{{Check: "firewall", Status: check.Problem, Detail: "d", Fix: "f"}, {Check: "conntrack", Status: check.OK, Detail: "d"}}}
	for _, o := range []struct {
		what, root string
		v          any
	}{{"check --json --trace", "check", j}, {"check --json, ECN passes", "check", clean}, {"check --box --json", "check.box", box}} {
		b, err := json.Marshal(o.v)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range schema.Check(o.what, o.root, b) {
			t.Error(e)
		}
	}
}
