package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pi2hop/pi2hop/instance"
	"github.com/pi2hop/pi2hop/internal/roottest"
	"github.com/pi2hop/pi2hop/netsys"
	"github.com/pi2hop/pi2hop/topology"
)

// TestConcurrentShellsOwnSubnetsAndRates starts 16 `shell --rate 10mbit`
// processes in the same instant, as a CI farm does, named so that they
// all ask for the same subnet first: each must get a subnet of its own, reach its $PI2HOP_HOST, and carry its own 10 Mbit/s
// (a TCP flow to an iperf3 server on the host, goodput counted by the
// receiver over 3 s after 1 s of slow start is left out). The floor probe
// is off: it is a measuring aid that costs ~5 % of a core per CPU and
// instance, 160 % of a core for 16 on 2 CPUs.
func TestConcurrentShellsOwnSubnetsAndRates(t *testing.T) {
	needRoot(t, "iperf3", "ping", "sh")
	bin := buildPi2hop(t)
	const n = 16
	type shellRun struct {
		name   string
		port   int
		cmd    *exec.Cmd
		stdout bytes.Buffer
		stderr bytes.Buffer
		err    error
	}
	runs := make([]*shellRun, n)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// Names that all ask for one subnet first (of the 254 shells take
	// turns in), so each must be moved past the others' under the lock.
	names := collidingNames("p2c", n, func(name string) int { return instance.OwnSlot(name, 254) })
	for i := range runs {
		r := &shellRun{name: names[i]}
		runs[i] = r
		t.Cleanup(func() { cleanupInstance(r.name, nil, &bytes.Buffer{}) })
		ln, err := net.Listen("tcp", ":0") // a free port for its server
		if err != nil {
			t.Fatal(err)
		}
		r.port = ln.Addr().(*net.TCPAddr).Port
		ln.Close()
		server := exec.CommandContext(ctx, "iperf3", "-s", "-1", "-p", fmt.Sprint(r.port))
		if err := server.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { server.Process.Kill(); server.Wait() })
		script := fmt.Sprintf(`echo host=$PI2HOP_HOST; ping -c 1 -W 5 $PI2HOP_HOST >/dev/null && echo ping=ok; iperf3 -c $PI2HOP_HOST -p %d -O 1 -t 3 -J`, r.port)
		r.cmd = exec.CommandContext(ctx, bin, "shell", "--name", r.name, "--rate", "10mbit", "--floor-probe=false", "--", "/bin/sh", "-c", script)
		r.cmd.Stdout, r.cmd.Stderr = &r.stdout, &r.stderr
	}
	for _, r := range runs {
		if err := waitListening(r.port, 10*time.Second); err != nil {
			t.Fatalf("iperf3 -s: %v", err)
		}
	}
	// All started at once: each forks from a goroutine released together.
	var wg sync.WaitGroup
	start := make(chan struct{})
	for _, r := range runs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			if r.err = r.cmd.Start(); r.err == nil {
				r.err = r.cmd.Wait()
			}
		}()
	}
	close(start)
	wg.Wait()

	hosts := map[string]string{}
	for _, r := range runs {
		out := r.stdout.String()
		if r.err != nil {
			t.Errorf("%s: %v\nstdout:\n%s\nstderr:\n%s", r.name, r.err, out, r.stderr.String())
			continue
		}
		host, _, _ := strings.Cut(strings.TrimPrefix(out, "host="), "\n")
		if other, ok := hosts[host]; ok {
			t.Errorf("%s and %s both got host address %s", other, r.name, host)
		}
		hosts[host] = r.name
		if !strings.Contains(out, "\nping=ok\n") {
			t.Errorf("%s: no ping reached %s:\n%s", r.name, host, out)
		}
		var res struct {
			End struct {
				Received struct {
					BPS float64 `json:"bits_per_second"`
				} `json:"sum_received"`
			} `json:"end"`
		}
		if i := strings.Index(out, "{"); i < 0 || json.Unmarshal([]byte(out[i:]), &res) != nil {
			t.Errorf("%s: no iperf3 JSON in:\n%s", r.name, out)
			continue
		}
		t.Logf("%s: host %s, TCP goodput %.2f Mbit/s at the receiver", r.name, host, res.End.Received.BPS/1e6)
		if res.End.Received.BPS < 0.9*10e6 {
			t.Errorf("%s: TCP goodput %.2f Mbit/s, want >= 90 %% of 10 Mbit/s", r.name, res.End.Received.BPS/1e6)
		}
	}
	for _, r := range runs {
		checkGone(t, r.name)
	}
}

// TestShellSameNameSameAddresses: the addresses of a shell derive from
// its name, so a script can rely on them: a second `shell --name x` gets
// the first one's addresses although another shell, started in between,
// still runs (taking the first free subnet would move x).
func TestShellSameNameSameAddresses(t *testing.T) {
	needRoot(t, "sh", "sleep")
	bin := buildPi2hop(t)
	x := roottest.Name("p2x")
	t.Cleanup(func() { cleanupInstance(x, nil, &bytes.Buffer{}) })
	const script = `echo $PI2HOP_HOST $PI2HOP_ADDR $PI2HOP_HOST6 $PI2HOP_ADDR6`
	addrs := func() string {
		t.Helper()
		out, err := exec.Command(bin, "shell", "--name", x, "--floor-probe=false", "--", "/bin/sh", "-c", script).Output()
		if err != nil {
			t.Fatalf("shell --name %s: %v", x, err)
		}
		return strings.TrimSpace(string(out))
	}
	first := addrs()
	host, _, _ := strings.Cut(first, " ")
	// Another shell that stays up, on a subnet other than x's (a name
	// whose own subnet is x's would take it: picked past).
	for k := 0; ; k++ {
		if k == 5 {
			t.Fatal("5 other names all took x's subnet")
		}
		y := roottest.Name("p2y")
		t.Cleanup(func() { cleanupInstance(y, nil, &bytes.Buffer{}) })
		cmd := exec.Command(bin, "shell", "--name", y, "--floor-probe=false", "--", "/bin/sh", "-c", "echo $PI2HOP_HOST; exec sleep 30")
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		line, _ := bufio.NewReader(stdout).ReadString('\n')
		if strings.TrimSpace(line) != host {
			t.Cleanup(func() { cmd.Process.Signal(syscall.SIGTERM); waitExit(t, cmd, 10*time.Second) })
			break
		}
		cmd.Process.Signal(syscall.SIGTERM)
		waitExit(t, cmd, 10*time.Second)
	}
	if second := addrs(); second != first || !strings.HasPrefix(first, "10.254.") || len(strings.Fields(first)) != 4 {
		t.Errorf("second shell --name %s: addresses %q, first %q; want the same four", x, second, first)
	}
	checkGone(t, x)
}

// collidingNames returns k instance names that ask for the same slot
// first (own gives a name's).
func collidingNames(prefix string, k int, own func(name string) int) []string {
	names := []string{roottest.Name(prefix)}
	for i := 0; len(names) < k; i++ {
		n := fmt.Sprintf("%s%x", names[0], i)
		if len(n) <= 12 && own(n) == own(names[0]) {
			names = append(names, n)
		}
	}
	return names
}

// startRun runs `pi2hop run` between ns's veths and waits for its
// control socket.
func startRun(t *testing.T, bin, ns, name string) *exec.Cmd {
	t.Helper()
	cmd, _ := startInstance(t, bin, ns, name, 20*time.Second, "", "run", "--name", name, "--lan", "lp0", "--wan", "lp1", "--rate", "10mbit", "--floor-probe=false")
	return cmd
}

// TestRunsInFourNamespacesOwnTables: four `run`s started at once in four
// namespaces, named so that their own routing tables and rule priority
// are one, each get a set of their own, recorded in their state files
// and in force in their namespaces.
func TestRunsInFourNamespacesOwnTables(t *testing.T) {
	needRoot(t, "ip")
	bin := buildPi2hop(t)
	names := collidingNames("p2g", 4, topology.GatewaySlot)
	nss := make([]string, len(names))
	cmds := make([]*exec.Cmd, len(names))
	for i, name := range names {
		nss[i] = testNS(t, fmt.Sprintf("g%d", i))
		t.Cleanup(func() {
			exec.Command("ip", "netns", "exec", nss[i], bin, "run", "--cleanup", "--name", name, "--lan", "lp0", "--wan", "lp1").Run()
		})
	}
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Add(1)
		go func() { defer wg.Done(); cmds[i] = startRun(t, bin, nss[i], name) }()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	seen := map[int]string{}
	for i, name := range names {
		st, err := instance.ReadState(name)
		if err != nil {
			t.Fatal(err)
		}
		slot, ok := st.Slots[instance.SpaceGateway]
		if !ok {
			t.Errorf("%s: no gateway slot in its state file: %+v", name, st)
			continue
		}
		if other, ok := seen[slot]; ok {
			t.Errorf("%s and %s share gateway slot %d", other, name, slot)
		}
		seen[slot] = name
		up, _, prio := topology.GatewayTablesAt(slot)
		out, _ := exec.Command("ip", "-n", nss[i], "rule").CombinedOutput()
		if want := fmt.Sprintf("%d:\tfrom all iif lp0 lookup %d", prio, up); !strings.Contains(string(out), want) {
			t.Errorf("%s (slot %d): no %q in ip rule of %s:\n%s", name, slot, want, nss[i], out)
		}
		if st.NetNS == nil || st.NetNS.Name != nss[i] {
			t.Errorf("%s: state file's namespace %v, want %q", name, st.NetNS, nss[i])
		}
	}
	for i, cmd := range cmds {
		cmd.Process.Signal(syscall.SIGTERM)
		if err := waitExit(t, cmd, 10*time.Second); err != nil {
			t.Errorf("run %s after SIGTERM: %v", names[i], err)
		}
		if _, err := os.Stat(instance.StatePath(names[i])); err == nil {
			t.Errorf("state file of %s left behind", names[i])
		}
	}
}

// TestCleanupFromAForeignNamespace: a `run` in namespace A is killed;
// `run --cleanup` from namespace B undoes in A (its forwarding back off,
// its rules gone) and changes nothing in B (whose forwarding stays on),
// saying where the instance lived. When A is gone too, the cleanup
// refuses, says so, changes nothing in B and removes the state file.
func TestCleanupFromAForeignNamespace(t *testing.T) {
	needRoot(t, "ip")
	bin := buildPi2hop(t)
	b := testNS(t, "fb")
	if err := netsys.WriteSysctl(b, "net/ipv4/ip_forward", "1"); err != nil {
		t.Fatal(err)
	}
	forward := func(ns string) string {
		t.Helper()
		v, err := netsys.ReadSysctl(ns, "net/ipv4/ip_forward")
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	cleanupFromB := func(name string) (string, error) {
		out, err := exec.Command("ip", "netns", "exec", b, bin, "run", "--cleanup", "--name", name, "--lan", "lp0", "--wan", "lp1").CombinedOutput()
		return string(out), err
	}
	killedIn := func(ns, name string) {
		t.Helper()
		if err := netsys.WriteSysctl(ns, "net/ipv4/ip_forward", "0"); err != nil {
			t.Fatal(err)
		}
		cmd := startRun(t, bin, ns, name)
		if forward(ns) != "1" {
			t.Fatalf("run in %s did not turn forwarding on: the test proves nothing", ns)
		}
		cmd.Process.Kill()
		waitExit(t, cmd, 10*time.Second)
	}

	a := testNS(t, "fa")
	name := testInstance(90)
	t.Cleanup(func() { exec.Command("ip", "netns", "exec", a, bin, "run", "--cleanup", "--name", name).Run() })
	killedIn(a, name)
	_, _, prio := topology.GatewayTables(name)
	if st, err := instance.ReadState(name); err == nil {
		_, _, prio = topology.GatewayTablesAt(st.Slots[instance.SpaceGateway])
	}
	out, err := cleanupFromB(name)
	t.Logf("cleanup from %s:\n%s", b, out)
	if err != nil {
		t.Errorf("cleanup from %s: %v\n%s", b, err, out)
	}
	if want := fmt.Sprintf("lived in network namespace %q", a); !strings.Contains(out, want) {
		t.Errorf("cleanup from %s does not say %s:\n%s", b, want, out)
	}
	if forward(b) != "1" || forward(a) != "0" {
		t.Errorf("after cleanup from %s: ip_forward %s there, %s in %s; want 1 (untouched), 0 (restored)", b, forward(b), forward(a), a)
	}
	if rules, _ := exec.Command("ip", "-n", a, "rule").CombinedOutput(); strings.Contains(string(rules), fmt.Sprintf("%d:", prio)) {
		t.Errorf("rules at pref %d left in %s:\n%s", prio, a, rules)
	}

	a2 := testNS(t, "fg")
	name2 := testInstance(91)
	t.Cleanup(func() { os.Remove(instance.StatePath(name2)) })
	killedIn(a2, name2)
	if out, err := exec.Command("ip", "netns", "del", a2).CombinedOutput(); err != nil {
		t.Fatalf("ip netns del %s: %v\n%s", a2, err, out)
	}
	out, err = cleanupFromB(name2)
	t.Logf("cleanup from %s, %s gone:\n%s", b, a2, out)
	if err == nil || !strings.Contains(out, fmt.Sprintf("lived in network namespace %q", a2)) || !strings.Contains(out, "no longer exists") {
		t.Errorf("cleanup from %s of an instance whose namespace is gone: %v\n%s\nwant a refusal that says where it lived", b, err, out)
	}
	if forward(b) != "1" {
		t.Errorf("ip_forward in %s is %s after the refused cleanup, want 1 (untouched)", b, forward(b))
	}
	if _, err := os.Stat(instance.StatePath(name2)); err == nil {
		t.Errorf("state file of %s left after the refused cleanup", name2)
	}
}
