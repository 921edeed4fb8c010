package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pi2hop/pi2hop/check"
	"github.com/pi2hop/pi2hop/netsys"
	"github.com/vishvananda/netlink"
)

// checkLoadCase is one bottleneck the load test must name: pi2hop run in
// the router of client ─ router ─ responder, with these flags.
type checkLoadCase struct {
	name     string
	hop      []string // pi2hop run's link and queue flags
	tbf      bool     // a kernel tbf at 10 Mbit/s on the client's egress, in front of the hop
	v6       bool     // check the responder's IPv6 address
	maxRate  string   // check's --max-rate; "" leaves the default
	load     string   // the bottleneck verdict
	fwd, rev string   // the ECN verdicts
	capAtHop bool     // measure the load at the hop against --max-rate
	noLoad   bool     // --load=false: the transitions alone
	warn     bool     // stats must say the hop is not the bottleneck
}

// TestCheckLoadVerdicts runs `pi2hop check` through a pi2hop hop of each
// kind and checks the bottleneck verdict, the ECN verdicts per direction
// and the exit status (0 only for the dual queue). The link is 10 Mbit/s
// so that the flows, not the CPU, fill it. The verdict reads medians of
// the probes' RTTs, so the cases that load the path run one after
// another: on two cores, several hops and flows at once delayed an L4S
// probe's median by 30 ms, which made DualPI2 read as a single queue.
// The case without load runs beside them.
func TestCheckLoadVerdicts(t *testing.T) {
	needRoot(t, "ip")
	bin := buildPi2hop(t)
	link := []string{"--rate", "10mbit", "--delay", "2ms"}
	with := func(extra ...string) []string { return append(append([]string{}, link...), extra...) }
	for i, tc := range []checkLoadCase{
		// The dual queue's verdict over IPv6; the other cases run
		// over IPv4.
		{name: "dualpi2 over IPv6", hop: with(), v6: true, load: check.DualQueue, fwd: check.Passes, rev: check.Passes},
		{name: "codel with ECN", hop: with("--aqm", "codel", "--ecn"), load: check.SingleQueue, fwd: check.Passes, rev: check.Passes},
		{name: "fifo", hop: with("--aqm", "fifo", "--limit", "100"), load: check.TailDrop, fwd: check.Passes, rev: check.Passes},
		// The load runs 13 s here, so that the hop can see 10 s of it and
		// warn (hop.NotBottleneckAfter, judged in whole seconds).
		{name: "tbf in front", hop: []string{"--rate", "100mbit", "--delay", "2ms"}, tbf: true, load: check.NotSaturated,
			fwd: check.Passes, rev: check.Passes, warn: true},
		{name: "beyond the cap", hop: []string{"--rate", "100mbit", "--delay", "2ms"}, maxRate: "8mbit", load: check.NotSaturated,
			fwd: check.Passes, rev: check.Passes, capAtHop: true},
		// ECT(1) made ECT(0) before the queue: the L4S flow lands in the
		// Classic queue, so the dual queue treats it as classic; the
		// responder's count shows the flow arrived ECT(0), so no verdict
		// on the bottleneck.
		{name: "ect1-to-ect0 on the uplink", hop: with("--up-ecn-fault", "ect1-to-ect0"), load: check.ChangedUnderLoad,
			fwd: check.ECT1ToECT0, rev: check.Passes},
		// Bleached after the queue on the downlink: the responder's echoes
		// arrive Not-ECT, the client's probes as sent.
		{name: "bleach after the queue on the downlink", hop: with("--down-ecn-fault", "bleach,after"), noLoad: true,
			fwd: check.Passes, rev: check.Bleached},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.noLoad {
				t.Parallel()
			}
			runCheckLoadCase(t, bin, testInstance(90+i), tc)
		})
	}
}

func runCheckLoadCase(t *testing.T, bin, name string, tc checkLoadCase) {
	l := newGatewayLab(t, name)
	t.Cleanup(func() { exec.Command("ip", "netns", "exec", l.router, bin, "run", "--cleanup", "--name", name).Run() })
	if tc.tbf {
		// A 2000-byte buffer holds one packet: the shaper in front drops
		// rather than queues, as a policer or a shallow-buffered link.
		if err := netsys.Do(l.client, func() error {
			c0, err := netlink.LinkByName("c0")
			if err != nil {
				return err
			}
			const rate = 10e6 / 8 // bytes/s
			return netlink.QdiscAdd(&netlink.Tbf{QdiscAttrs: netlink.QdiscAttrs{LinkIndex: c0.Attrs().Index,
				Handle: netlink.MakeHandle(1, 0), Parent: netlink.HANDLE_ROOT},
				Rate: rate, Limit: 2000, Buffer: netlink.Xmittime(rate, 2000)})
		}); err != nil {
			t.Fatalf("tbf: %v", err)
		}
	}
	l.startGateway(t, bin, name, tc.hop...)
	respond(t, bin, l.server)

	to := netip.AddrPortFrom(l.serverAddr, check.DefaultPort).String()
	if tc.v6 {
		to = fmt.Sprintf("[fd00:254:20::2]:%d", check.DefaultPort)
	}
	d := "3s"
	if tc.warn {
		d = "13s"
	}
	args := []string{"netns", "exec", l.client, bin, "check", "--to", to, "--probes", "5", "--every", "2ms", "--json"}
	switch {
	case tc.noLoad:
		args = append(args, "--load=false")
	case tc.maxRate != "":
		args = append(args, "--duration", d, "--max-rate", tc.maxRate)
	default:
		args = append(args, "--duration", d)
	}
	stop := func() []rateSample { return nil }
	if tc.capAtHop || tc.warn {
		stop = pollUp(bin, name)
	}
	j, code := runCheckJSON(t, args...)
	atHop := stop()
	if (j.Load == nil) != tc.noLoad {
		t.Fatalf("check exit %d: load %+v, want one unless --load=false", code, j.Load)
	}
	if j.Forward.Verdict != tc.fwd || j.Reverse.Verdict != tc.rev {
		t.Errorf("ECN forward %q, reverse %q; want %q, %q", j.Forward.Verdict, j.Reverse.Verdict, tc.fwd, tc.rev)
	}
	if tc.noLoad {
		if code != 1 || j.Ready {
			t.Errorf("exit status %d, ready %v; want 1, not ready", code, j.Ready)
		}
		return
	}
	ld := j.Load
	t.Logf("%s: %s (%s); L4S %.2f Mbit/s CE %.1f %% p50/p99 %.1f/%.1f ms; classic %.2f Mbit/s loss %.1f %% p50/p99 %.1f/%.1f ms; base %.2f ms",
		tc.name, ld.Verdict, ld.Detail, ld.L4S.GoodputBps/1e6, 100*ld.L4S.CEFrac, ld.L4S.RTTP50Ms, ld.L4S.RTTP99Ms,
		ld.Classic.GoodputBps/1e6, 100*ld.Classic.LossFrac, ld.Classic.RTTP50Ms, ld.Classic.RTTP99Ms, ld.BaseRTTMs)
	if ld.Verdict != tc.load {
		t.Errorf("bottleneck %q (%s), want %q", ld.Verdict, ld.Detail, tc.load)
	}
	wantCode := 1
	if tc.load == check.DualQueue && tc.fwd == check.Passes && tc.rev == check.Passes {
		wantCode = 0
	}
	if code != wantCode || j.Ready != (wantCode == 0) {
		t.Errorf("exit status %d, ready %v; want %d (why: %s)", code, j.Ready, wantCode, j.Why)
	}
	if tc.capAtHop {
		checkUnderCap(t, atHop, 8e6)
	}
	warned := ""
	for _, s := range atHop {
		if s.warning != "" {
			warned = s.warning
		}
	}
	if tc.warn && !strings.HasPrefix(warned, "not the bottleneck: the path is limited elsewhere at about ") {
		t.Errorf("stats never said the hop is not the bottleneck (%d samples)", len(atHop))
	}
	if tc.capAtHop && warned != "" {
		t.Errorf("stats said %q after a 3 s load", warned)
	}
	if warned != "" {
		t.Logf("stats: %s", warned)
	}
}

// respond runs `check --serve` in namespace ns until the test ends.
func respond(t *testing.T, bin, ns string) {
	t.Helper()
	cmd := exec.Command("ip", "netns", "exec", ns, bin, "check", "--serve", fmt.Sprintf(":%d", check.DefaultPort))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	ready := make(chan string, 1)
	go func() {
		l, _ := bufio.NewReader(out).ReadString('\n')
		ready <- l
	}()
	select {
	case l := <-ready:
		if !strings.Contains(l, "answering on") {
			t.Fatalf("check --serve said %q, want answering on", l)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("check --serve did not say it answers within 5 s")
	}
}

// rateSample is the hop's uplink at one moment: the bytes it has read,
// and its not-the-bottleneck warning.
type rateSample struct {
	at      time.Time
	bytes   uint64
	warning string
}

// pollUp reads the hop's uplink stats every 200 ms until the function it
// returns is called, which returns the samples.
func pollUp(bin, name string) func() []rateSample {
	var (
		mu      sync.Mutex
		samples []rateSample
	)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			out, err := exec.Command(bin, "stats", "--name", name, "--json").Output()
			// The owner's own time of the snapshot: the command's
			// latency on a busy machine would skew the spans.
			var s struct {
				Time time.Time `json:"time"`
				Dirs []struct {
					InBytes uint64 `json:"in_bytes"`
					Warning string `json:"not_bottleneck"`
				} `json:"directions"`
			}
			if err == nil && json.Unmarshal(out, &s) == nil && len(s.Dirs) == 2 {
				mu.Lock()
				samples = append(samples, rateSample{s.Time, s.Dirs[0].InBytes, s.Dirs[0].Warning})
				mu.Unlock()
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return func() []rateSample {
		cancel()
		<-done
		mu.Lock()
		defer mu.Unlock()
		return samples
	}
}

// checkUnderCap checks that no span of a second or more between two
// samples carried more than capBPS into the hop.
func checkUnderCap(t *testing.T, samples []rateSample, capBPS float64) {
	t.Helper()
	worst := 0.0
	for i := range samples {
		for k := i + 1; k < len(samples); k++ {
			dt := samples[k].at.Sub(samples[i].at)
			if dt < time.Second {
				continue
			}
			worst = max(worst, float64(samples[k].bytes-samples[i].bytes)*8/dt.Seconds())
			break
		}
	}
	t.Logf("the load at the hop: at most %.2f Mbit/s over a second (cap %.0f)", worst/1e6, capBPS/1e6)
	if worst == 0 {
		t.Errorf("no load seen at the hop (%d samples)", len(samples))
	}
	if worst > capBPS {
		t.Errorf("the load reached %.0f bit/s at the hop over a second, over its cap %.0f", worst, capBPS)
	}
}

// runCheckJSON runs `ip ARGS` (a `pi2hop check --json` in a namespace)
// and returns its JSON and exit status, failing the test when it printed
// no JSON.
func runCheckJSON(t *testing.T, args ...string) (check.JSON, int) {
	t.Helper()
	var stderr strings.Builder
	cmd := exec.Command("ip", args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	var j check.JSON
	if err := json.Unmarshal(out, &j); err != nil {
		t.Fatalf("check exit %d, output %q: %v\n%s", code, out, err, stderr.String())
	}
	return j, code
}
