package main

import (
	"bytes"
	"errors"
	"net/netip"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pi2hop/pi2hop/internal/cli"
)

// TestRunWaitsForInterfaces: run --wait-interfaces starts before its
// interfaces exist, as in a container whose interfaces an orchestrator
// attaches later; they appear 2 s after the start (renamed into place)
// and it forwards through them.
func TestRunWaitsForInterfaces(t *testing.T) {
	needRoot(t, "ip")
	t.Parallel()
	bin := buildPi2hop(t)
	name := testInstance(83)
	l := newGatewayLab(t, name)
	t.Cleanup(func() { exec.Command("ip", "netns", "exec", l.router, bin, "run", "--cleanup", "--name", name).Run() })
	ip := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("ip", append([]string{"-n", l.router}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("ip %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	rename := func(from, to string) {
		ip("link", "set", from, "down")
		ip("link", "set", from, "name", to)
		ip("link", "set", to, "up")
	}
	rename("rl", "hidel")
	rename("rw", "hidew")
	go func() {
		time.Sleep(2 * time.Second)
		// IPv4 addresses stay on a renamed link; the client and server
		// route through them again once they are back.
		for _, p := range [][2]string{{"hidel", "rl"}, {"hidew", "rw"}} {
			exec.Command("ip", "-n", l.router, "link", "set", p[0], "down").Run()
			exec.Command("ip", "-n", l.router, "link", "set", p[0], "name", p[1]).Run()
			exec.Command("ip", "-n", l.router, "link", "set", p[1], "up").Run()
		}
	}()
	start := time.Now()
	cmd := l.startGateway(t, bin, name, "--rate", "50mbit", "--wait-interfaces", "10s")
	if waited := time.Since(start); waited < 2*time.Second {
		t.Fatalf("run was up after %v, before its interfaces existed", waited)
	}
	in0 := upInPackets(t, bin, name)
	addr := netip.AddrPortFrom(l.serverAddr, 5008).String()
	if got := sendTCP(t, l.client, l.server, "tcp", addr, 200<<10, 10*time.Second); got != 200<<10 {
		t.Errorf("client -> server through the late interfaces: %d of %d bytes arrived", got, 200<<10)
	}
	if in1 := upInPackets(t, bin, name); in1-in0 < 100 {
		t.Errorf("200 kB client -> server: the uplink read %d packets, want them through the hop", in1-in0)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	if err := waitExit(t, cmd, 10*time.Second); err != nil {
		t.Errorf("pi2hop run after SIGTERM: %v", err)
	}
}

// TestRunWaitInterfacesTimesOut: with an interface that never appears,
// run --wait-interfaces 3s exits 2 after the 3 s, naming it.
func TestRunWaitInterfacesTimesOut(t *testing.T) {
	needRoot(t, "ip")
	t.Parallel()
	bin := buildPi2hop(t)
	ns := testNS(t, "p2wi")
	var stderr bytes.Buffer
	c := exec.Command("ip", "netns", "exec", ns, bin, "run", "--name", testInstance(84), "--lan", "lp0", "--wan", "nope0", "--wait-interfaces", "3s")
	c.Stderr = &stderr
	start := time.Now()
	done := make(chan error, 1)
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- c.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(10 * time.Second):
		c.Process.Kill()
		t.Fatal("run --wait-interfaces 3s still running after 10s")
	}
	took := time.Since(start)
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 {
		t.Fatalf("run: %v, want exit status 2; stderr %q", err, stderr.String())
	}
	want := "pi2hop run: --wait-interfaces 3s: interface \"nope0\" did not appear within 3s\n"
	if stderr.String() != want {
		t.Errorf("stderr %q, want %q", stderr.String(), want)
	}
	if took < 3*time.Second || took > 6*time.Second {
		t.Errorf("exited after %v, want after the 3s bound (and soon after)", took)
	}
}

// TestIfaceByPrefix: --lan and --wan keep a name as given and turn a
// prefix or an address into the interface holding an address in it (the
// loopback's 127.0.0.1 here, which needs no privilege to read); one no
// interface has an address in exits 2 naming the flag.
func TestIfaceByPrefix(t *testing.T) {
	for _, tt := range []struct{ in, want, err string }{
		{in: "eth7", want: "eth7"},
		{in: "127.0.0.0/8", want: "lo"},
		{in: "127.0.0.1", want: "lo"},
		{in: "192.0.2.77/32", err: "pi2hop run: --lan 192.0.2.77/32: no interface with an address in 192.0.2.77/32 appeared within 0s"},
	} {
		v := tt.in
		err := ifaceByPrefix(t.Context(), "run", "lan", &v, 0)
		var pe *cli.PlatformError
		switch {
		case tt.err == "" && (err != nil || v != tt.want):
			t.Errorf("--lan %s: %q, %v; want %q", tt.in, v, err, tt.want)
		case tt.err != "" && (!errors.As(err, &pe) || err.Error() != tt.err):
			t.Errorf("--lan %s: %v; want exit 2 saying %q", tt.in, err, tt.err)
		}
	}
}
