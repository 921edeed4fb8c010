package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pi2hop/pi2hop/instance"
	"github.com/pi2hop/pi2hop/internal/cli"
	"github.com/pi2hop/pi2hop/internal/roottest"
	"github.com/pi2hop/pi2hop/netsys"
	"github.com/pi2hop/pi2hop/pcap"
	"github.com/vishvananda/netlink"
)

func needRoot(t *testing.T, tools ...string) {
	t.Helper()
	roottest.Need(t, tools...)
}

// testInstance is a unique instance name for this test process.
func testInstance(n int) string { return fmt.Sprintf("p2t%d%d", os.Getpid()%10000, n) }

// checkGone fails if anything of instance name is left on the host.
func checkGone(t *testing.T, name string) {
	t.Helper()
	if netsys.NamespaceExists(name + "-shell") {
		t.Errorf("namespace %s-shell left behind", name)
	}
	for _, dev := range []string{name + "-sh", name + "-up", name + "-dn"} {
		if _, err := netlink.LinkByName(dev); err == nil {
			t.Errorf("device %s left behind", dev)
		}
	}
	for _, f := range []string{instance.StatePath(name), instance.SocketPath(name)} {
		if _, err := os.Stat(f); err == nil {
			t.Errorf("%s left behind", f)
		}
	}
}

func TestShellRunsCommandBehindTheHop(t *testing.T) {
	needRoot(t, "bash") // for /dev/tcp
	name := testInstance(1)
	t.Cleanup(func() { cleanupInstance(name, nil, &bytes.Buffer{}) })

	// The host listens on every address; the command connects to the
	// host's end of the TUN pair through the hop and says hello.
	ln, err := net.Listen("tcp", ":0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	got := make(chan string, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(5 * time.Second))
		line, _ := bufio.NewReader(c).ReadString('\n')
		got <- strings.TrimSpace(line)
		fmt.Fprintf(c, "reply-from-host\n")
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	// A round trip: the command waits for the host's answer, so nothing is
	// still in flight in the hop when the command exits.
	script := fmt.Sprintf(`exec 3<>/dev/tcp/$PI2HOP_HOST/%d && echo hello-$PI2HOP_ADDR >&3 && read -r reply <&3 && echo $reply; echo err >&2; exit 3`, port)
	var stdout, stderr bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	capFile := filepath.Join(t.TempDir(), "shell.pcapng")
	err = Run(ctx, []string{"shell", "--name", name, "--rate", "50mbit", "--delay", "1ms", "--capture", capFile, "--", "/bin/bash", "-c", script},
		strings.NewReader(""), &stdout, &stderr)
	var ee *cli.ExitError
	if !errors.As(err, &ee) || ee.Code != 3 {
		t.Fatalf("shell returned %v, want exit status 3; stderr:\n%s", err, stderr.String())
	}
	if stdout.String() != "reply-from-host\n" || !strings.Contains(stderr.String(), "err\n") {
		t.Errorf("stdout %q, stderr %q: output did not pass through", stdout.String(), stderr.String())
	}
	if !strings.Contains(stderr.String(), "pi2hop shell \""+name+"\": 50mbit up/down, delay 1ms, dualpi2\nshell side ") {
		t.Errorf("no start-up message in %q", stderr.String())
	}
	select {
	case msg := <-got:
		if !strings.HasPrefix(msg, "hello-10.254.") {
			t.Errorf("host received %q", msg)
		}
	case <-time.After(time.Second):
		t.Error("the command's connection did not reach the host")
	}
	// The capture holds the exchange at the taps: in and out, both ways.
	r, err := pcap.Open(capFile)
	if err != nil {
		t.Fatalf("capture: %v", err)
	}
	defer r.Close()
	n := 0
	for {
		if _, err := r.Next(); err != nil {
			break
		}
		n++
	}
	if n < 12 { // handshake, data, reply, FIN: >= 6 packets, each at in and out
		t.Errorf("capture holds %d packets, want >= 12", n)
	}
	checkGone(t, name)
}

func TestShellRefusesABusyName(t *testing.T) {
	needRoot(t)
	name := testInstance(2)
	t.Cleanup(func() { os.Remove(instance.StatePath(name)) })
	if err := instance.WriteState(name, &instance.State{PID: os.Getpid(), Command: "test"}); err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	err := Run(context.Background(), []string{"shell", "--name", name, "--", "true"}, strings.NewReader(""), &bytes.Buffer{}, &stderr)
	if err == nil || !strings.Contains(err.Error(), "already running") {
		t.Errorf("err = %v, want 'already running'", err)
	}
}

// TestShellNAT gives the shell onward connectivity: a namespace standing
// for "the network" hangs off the host on a veth, and a server there must
// see the shell's connection coming from the host's address.
func TestShellNAT(t *testing.T) {
	needRoot(t, "nft", "bash")
	name := testInstance(4)
	t.Cleanup(func() { cleanupInstance(name, nil, &bytes.Buffer{}) })
	outside := name + "o"
	j := netsys.NewJournal(nil)
	t.Cleanup(func() {
		if err := j.Undo(); err != nil {
			t.Error(err)
		}
	})
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(j.NewNamespace(outside))
	must(j.AddVeth("", name+"h", outside, "x0"))
	must(j.AddAddr("", name+"h", netip.MustParsePrefix("10.254.250.1/24")))
	must(j.AddAddr(outside, "x0", netip.MustParsePrefix("10.254.250.2/24")))
	fwd, _ := netsys.ReadSysctl("", "net/ipv4/ip_forward")

	var ln net.Listener
	must(netsys.Do(outside, func() (err error) { ln, err = net.Listen("tcp", "10.254.250.2:7001"); return }))
	defer ln.Close()
	from := make(chan string, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		from <- c.RemoteAddr().(*net.TCPAddr).IP.String()
		fmt.Fprintf(c, "hello\n")
	}()
	var stdout, stderr bytes.Buffer
	script := `exec 3<>/dev/tcp/10.254.250.2/7001 && read -r x <&3 && echo $x`
	err := Run(context.Background(), []string{"shell", "--name", name, "--nat", "--rate", "100mbit", "--", "/bin/bash", "-c", script},
		strings.NewReader(""), &stdout, &stderr)
	if err != nil || stdout.String() != "hello\n" {
		t.Fatalf("shell --nat: %v, stdout %q\n%s", err, stdout.String(), stderr.String())
	}
	select {
	case ip := <-from:
		if ip != "10.254.250.1" {
			t.Errorf("the outside saw the connection from %s, want the host's 10.254.250.1 (masquerade)", ip)
		}
	default:
		t.Error("no connection reached the outside")
	}
	if v, _ := netsys.ReadSysctl("", "net/ipv4/ip_forward"); v != fwd {
		t.Errorf("ip_forward %s after the shell, was %s", v, fwd)
	}
	if out, _ := exec.Command("nft", "list", "tables").CombinedOutput(); strings.Contains(string(out), "pi2hop-"+name) {
		t.Errorf("nftables table left behind:\n%s", out)
	}
	checkGone(t, name)
}

// TestShellEndsWhatItsCommandLeft: a command that forks (sh -c with a
// process in the background) leaves nothing running when the shell ends,
// whether the command exits by itself or the shell is stopped (as by
// SIGTERM: its context ends): the child that outlived the command is
// ended with the namespace it ran in.
func TestShellEndsWhatItsCommandLeft(t *testing.T) {
	needRoot(t, "sh", "sleep")
	t.Parallel() // it times nothing
	for i, stop := range []bool{false, true} {
		t.Run(fmt.Sprintf("stopped=%v", stop), func(t *testing.T) {
			name := testInstance(200 + i)
			t.Cleanup(func() { cleanupInstance(name, nil, &bytes.Buffer{}) })
			pidFile := filepath.Join(t.TempDir(), "pid")
			script := fmt.Sprintf(`sleep 600 & echo $! > %s.tmp; mv %s.tmp %s`, pidFile, pidFile, pidFile)
			if stop {
				script += "; sleep 600" // the command itself runs until stopped
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			done := make(chan error, 1)
			go func() {
				done <- Run(ctx, []string{"shell", "--name", name, "--floor-probe=false", "--", "/bin/sh", "-c", script},
					strings.NewReader(""), &bytes.Buffer{}, &bytes.Buffer{})
			}()
			var pid int
			for deadline := time.Now().Add(15 * time.Second); pid == 0; time.Sleep(20 * time.Millisecond) {
				if b, err := os.ReadFile(pidFile); err == nil {
					fmt.Sscan(string(b), &pid)
				}
				if time.Now().After(deadline) {
					t.Fatal("waited 15 s for the command's background process")
				}
			}
			if stop {
				cancel()
			}
			select {
			case <-done:
			case <-time.After(20 * time.Second):
				t.Fatal("waited 20 s for the shell to end")
			}
			// Gone, or a zombie its new parent has not reaped yet.
			if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
				if f := strings.Fields(string(b)); len(f) > 2 && f[2] != "Z" {
					t.Errorf("the command's background process %d still runs (state %s) after the shell ended", pid, f[2])
				}
			}
		})
	}
}
