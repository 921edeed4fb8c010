package main

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// onlyNetAdmin runs bin as root with CAP_NET_ADMIN alone (as a container
// with --cap-add NET_ADMIN and docker's other defaults dropped): the
// bounding set caps what root's exec gets.
func onlyNetAdmin(bin string, args ...string) *exec.Cmd {
	return exec.Command("setpriv", append([]string{"--inh-caps=-all", "--ambient-caps=-all", "--bounding-set=-all,+net_admin", "--", bin}, args...)...)
}

// TestCommandsNameTheMissingCapability: shell and lab create network
// namespaces (CAP_SYS_ADMIN); with CAP_NET_ADMIN alone each exits 2 with
// one line naming the capability, before it changes anything.
func TestCommandsNameTheMissingCapability(t *testing.T) {
	needRoot(t, "setpriv")
	t.Parallel()
	bin := buildPi2hop(t)
	for _, args := range [][]string{
		{"shell", "--name", testInstance(80), "--", "true"},
		{"lab", "--quick", "--name", testInstance(81)},
	} {
		var stderr bytes.Buffer
		c := onlyNetAdmin(bin, args...)
		c.Stderr = &stderr
		err := c.Run()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 {
			t.Errorf("%s: %v, want exit status 2; stderr %q", args[0], err, stderr.String())
			continue
		}
		want := "pi2hop " + args[0] + " needs CAP_SYS_ADMIN to create network namespaces; run as root or add it (docker: --cap-add SYS_ADMIN)\n"
		if stderr.String() != want {
			t.Errorf("%s: stderr %q, want %q", args[0], stderr.String(), want)
		}
	}
}

// TestRunWithOnlyNetAdmin: run needs CAP_NET_ADMIN and the TUN device
// only. Without CAP_SYS_NICE it starts, says in one line that pacing is
// degraded and why, and leaves nothing behind on SIGINT. It runs in a
// namespace of its own, between the two ends of a veth pair.
func TestRunWithOnlyNetAdmin(t *testing.T) {
	needRoot(t, "setpriv", "ip")
	t.Parallel()
	bin := buildPi2hop(t)
	ns := testNS(t, "p2lp")
	name := testInstance(82)
	c := exec.Command("ip", "netns", "exec", ns, "setpriv", "--inh-caps=-all", "--ambient-caps=-all", "--bounding-set=-all,+net_admin", "--",
		bin, "run", "--name", name, "--lan", "lp0", "--wan", "lp1", "--rate", "10mbit", "--floor-probe=false")
	stderr, err := c.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Process.Kill(); c.Wait() })
	lines := make(chan string, 16)
	go func() {
		s := bufio.NewScanner(stderr)
		for s.Scan() {
			lines <- s.Text()
		}
		close(lines)
	}()
	var all []string
	running, degraded := false, false
	deadline := time.After(10 * time.Second)
	for !running || !degraded {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("run exited before its start-up lines; stderr:\n%s", strings.Join(all, "\n"))
			}
			all = append(all, l)
			running = running || strings.HasPrefix(l, "pi2hop run \""+name+"\"")
			degraded = degraded || strings.Contains(l, "no CAP_SYS_NICE") && strings.Contains(l, "pacing degraded") && strings.Contains(l, "degraded=realtime")
		case <-deadline:
			t.Fatalf("no start-up line and degradation line within 10s; stderr:\n%s", strings.Join(all, "\n"))
		}
	}
	c.Process.Signal(syscall.SIGINT)
	done := make(chan error, 1)
	go func() {
		for l := range lines {
			all = append(all, l)
		}
		done <- c.Wait()
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("run after SIGINT: %v; stderr:\n%s", err, strings.Join(all, "\n"))
		}
	case <-time.After(10 * time.Second):
		t.Fatal("run did not exit within 10s of SIGINT")
	}
	if _, err := os.Stat("/run/pi2hop/" + name + ".json"); err == nil {
		t.Errorf("state file of %s left behind", name)
	}
	out, _ := exec.Command("ip", "-n", ns, "-o", "link").CombinedOutput()
	if strings.Contains(string(out), name) {
		t.Errorf("devices of %s left behind:\n%s", name, out)
	}
}

// testNS makes a namespace with a veth pair lp0/lp1 up in it, deleted
// when the test ends.
func testNS(t *testing.T, prefix string) string {
	t.Helper()
	ns := testInstance(0) + prefix
	for _, args := range [][]string{
		{"netns", "add", ns},
		{"-n", ns, "link", "add", "lp0", "type", "veth", "peer", "name", "lp1"},
		{"-n", ns, "link", "set", "lp0", "up"},
		{"-n", ns, "link", "set", "lp1", "up"},
		{"-n", ns, "link", "set", "lo", "up"},
	} {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		if args[0] == "netns" {
			t.Cleanup(func() { exec.Command("ip", "netns", "del", ns).Run() })
		}
	}
	return ns
}
