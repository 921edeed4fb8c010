package main

import (
	"bytes"
	"flag"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pi2hop/pi2hop/instance"
	"github.com/pi2hop/pi2hop/netsys"
)

// The stress suite's lifetime tests: signals at random instants of a
// shell's start-up and teardown, and a soak under load with live edits.
// Cleanup from a foreign namespace is TestCleanupFromAForeignNamespace,
// which make stress runs with these.

var stressSeed = flag.Uint64("stress-seed", 0, "seed of TestStressSignals' random instants (0: from the clock); the test prints the one it used")

// TestStressSignals sends SIGINT, SIGTERM or SIGHUP to a `shell --nat
// -- sleep 5` at a random instant 0–500 ms after its exec (every other
// one within 50 ms, where start-up is mostly under way), or a second one
// at a random instant of the teardown a first signal started:
// after each, the test host is as before (links, addresses, rules,
// routes, nftables tables, sysctls, namespaces, state file and socket)
// and the command is gone. The seed is printed so a failure replays.
func TestStressSignals(t *testing.T) {
	needRoot(t, "nft", "sleep")
	bin := buildPi2hop(t)
	seed := *stressSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	size := ""
	if *stressFull {
		size = " -stress"
	}
	t.Logf("seed %d (replay: go test -run TestStressSignals ./cmd/pi2hop -args%s -stress-seed %d)", seed, size, seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	name := testInstance(96)
	h := newTestHost(t, name)
	t.Cleanup(func() { netsys.Do(h.ns, exec.Command(bin, "shell", "--cleanup", "--name", name).Run) })
	before := snapshot(t, h.ns, name)
	sigs := []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP}
	n := stressSize(4, 20)
	var early, took, upMax time.Duration
	upMin := time.Hour
	var beforeHandler, inStartup, startups int
	for i := range n {
		phase := []string{"start-up", "teardown"}[i%2]
		sig := sigs[rng.IntN(len(sigs))]
		// Start-up is short: every other start-up signal comes within
		// 50 ms of the exec, the rest within 500 ms.
		delay := time.Duration(rng.IntN(501)) * time.Millisecond
		if i%4 == 2 {
			delay = time.Duration(rng.IntN(50_001)) * time.Microsecond
		}
		what := fmt.Sprintf("seed %d, iteration %d: %v %v into the %s", seed, i, sig, delay, phase)
		t0 := time.Now()
		p := startIn(t, h.ns, bin, "shell", "--name", name, "--nat", "--rate", "50mbit", "--", "sleep", "5")
		if phase == "teardown" {
			p.waitRunning(what, nil)
			up := time.Since(t0)
			upMin, upMax = min(upMin, up), max(upMax, up)
			first := sigs[rng.IntN(len(sigs))]
			p.cmd.Process.Signal(first)
			what = fmt.Sprintf("%s started by %v", what, first)
		}
		time.Sleep(delay)
		if phase == "start-up" {
			startups++
			select {
			case <-p.running:
			default:
				inStartup++ // before the start-up line: mid start-up
			}
		}
		p.cmd.Process.Signal(sig)
		select {
		case <-p.done:
		case <-time.After(30 * time.Second):
			t.Fatalf("%s: no exit within 30 s:\n%s", what, p.log())
		}
		took = max(took, time.Since(t0))
		if ws, ok := p.state.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			// Only before main's handler is in place, when it has made
			// nothing; the snapshot below says whether that holds.
			if phase != "start-up" || strings.TrimSpace(p.log()) != "" {
				t.Errorf("%s: died of %v instead of cleaning up:\n%s", what, ws.Signal(), p.log())
			}
			beforeHandler++
			early = max(early, delay)
		}
		deadline := time.Now().Add(5 * time.Second)
		for len(appsIn(name+"-shell")) > 0 && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if apps := appsIn(name + "-shell"); len(apps) > 0 {
			t.Fatalf("%s: the command (pids %v) outlived pi2hop by 5 s:\n%s", what, apps, p.log())
		}
		if after := snapshot(t, h.ns, name); after != before {
			t.Fatalf("%s: left behind:\n got %s\nwant %s\n%s", what, after, before, p.log())
		}
	}
	t.Logf("figures: %d signals (seed %d) at random instants of start-up and teardown: nothing left after any; "+
		"start-up (exec to its last line) %v-%v; %d of %d start-up ones before the start-up line; %d ended the process before its handler (latest at %v); slowest exec-to-exit %v",
		n, seed, upMin.Round(time.Millisecond), upMax.Round(time.Millisecond), inStartup, startups, beforeHandler, early, took.Round(time.Millisecond))
}

// TestStressSoak runs a shell at 100 Mbit/s with 4 TCP flows (iperf3)
// through it and a live set every 10 s (rate 100mbit, 80mbit, delay 5ms,
// 10ms, within what the shell started with), polling stats every second:
// no request fails, the link stays busy, and RSS is flat, at the end at
// most 1.2 times what it was at 1 minute (a third of the run in the quick
// slice), as garbage made while idle or per request would not leave it.
// It times nothing, so it runs beside the other tests that time nothing.
func TestStressSoak(t *testing.T) {
	needRoot(t, "iperf3", "sh")
	t.Parallel()
	bin := buildPi2hop(t)
	dur := time.Duration(stressSize(20, 600)) * time.Second
	ref := min(time.Minute, dur/3)
	name := testInstance(97)
	port := freePort(t, 97)
	server := exec.Command("iperf3", "-s", "-p", fmt.Sprint(port))
	var serverOut bytes.Buffer
	server.Stdout, server.Stderr = &serverOut, &serverOut
	if err := server.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { server.Process.Kill(); server.Wait() })
	if err := waitListening(port, 10*time.Second); err != nil {
		t.Fatalf("iperf3 -s: %v\n%s", err, serverOut.String())
	}
	t.Cleanup(func() { exec.Command(bin, "shell", "--cleanup", "--name", name).Run() })
	secs := int((dur + 30*time.Second) / time.Second) // outlasts the soak; the shell is ended first
	p := startIn(t, "", bin, "shell", "--name", name, "--rate", "100mbit", "--delay", "10ms", "--", "/bin/sh", "-c",
		fmt.Sprintf("iperf3 -c $PI2HOP_HOST -p %d -P 4 -t %d -i 0 >/dev/null", port, secs))
	p.waitRunning("shell", func() bool { _, err := instance.Stats(name); return err == nil })
	pid := p.cmd.Process.Pid
	edits := [][]string{{"--rate", "80mbit"}, {"--delay", "5ms"}, {"--rate", "100mbit"}, {"--delay", "10ms"}}
	const warmup = 5 * time.Second // the flows' slow start
	var (
		start, atRef, end procMem
		maxRSS            int
		failed, requests  int
		firstErr          string
		busy0, busyN      int64
		t0N               time.Time
		minUtil           = 2.0
		prevBusy          int64
		prevT             time.Time
	)
	start = readProcMem(t, pid)
	begin := time.Now()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for i := 1; ; i++ {
		<-tick.C
		el := time.Since(begin)
		select {
		case <-p.done:
			t.Fatalf("the shell exited during the soak:\n%s\n%s", p.log(), serverOut.String())
		default:
		}
		m := readProcMem(t, pid)
		maxRSS = max(maxRSS, m.rss)
		if atRef.rss == 0 && el >= ref {
			atRef = m
		}
		if i%60 == 0 {
			t.Logf("%v: RSS %s, fds %d", el.Round(time.Second), mb(m.rss), m.fds)
		}
		requests++
		s, err := instance.Stats(name)
		if err != nil {
			failed++
			if firstErr == "" {
				firstErr = "stats: " + err.Error()
			}
		} else if b := max(s.Up.Link.Busy, s.Down.Link.Busy); el >= warmup {
			now := s.Up.Taken
			if busy0 == 0 {
				busy0, t0N = b, now
			} else if d := now.Sub(prevT); d > 0 {
				minUtil = min(minUtil, float64(b-prevBusy)/float64(d))
			}
			busyN, prevBusy, prevT = b, b, now
		}
		if i%10 == 0 {
			e := edits[(i/10-1)%len(edits)]
			requests++
			if out, err := exec.Command(bin, append([]string{"set", "--name", name}, e...)...).CombinedOutput(); err != nil {
				failed++
				if firstErr == "" {
					firstErr = fmt.Sprintf("set %s: %v: %s", strings.Join(e, " "), err, out)
				}
			}
		}
		if el >= dur {
			end = m
			break
		}
	}
	util := float64(busyN-busy0) / float64(prevT.Sub(t0N))
	p.endBy("shell", "SIGTERM")
	t.Logf("figures: soak %v at 100 Mbit/s, 4 TCP flows, a live set every 10 s: RSS start %s, at %v %s, max %s, end %s; "+
		"fds %d -> %d; link utilisation while steady %.1f %% (lowest 1-s window %.1f %%); failed requests %d of %d",
		dur, mb(start.rss), ref, mb(atRef.rss), mb(maxRSS), mb(end.rss), start.fds, end.fds, 100*util, 100*minUtil, failed, requests)
	if failed > 0 {
		t.Errorf("%d of %d requests failed, first: %s", failed, requests, firstErr)
	}
	if lim := atRef.rss * 6 / 5; end.rss > lim {
		t.Errorf("RSS at the end %s, more than 1.2 times its %s at %v: not flat", mb(end.rss), mb(atRef.rss), ref)
	}
	if end.fds > start.fds+8 {
		t.Errorf("fds %d at the start, %d at the end: leaking", start.fds, end.fds)
	}
	// Not a bound on the hop's speed (the machine is shared): that the soak
	// loaded the link at all, without which its RSS proves little.
	if util < 0.5 {
		t.Errorf("link busy %.1f %% of the steady time: the flows did not load it\n%s\n%s", 100*util, p.log(), serverOut.String())
	}
	checkGone(t, name)
}
