package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pi2hop/pi2hop/instance"
	"github.com/pi2hop/pi2hop/netsys"
	"github.com/pi2hop/pi2hop/topology"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// The tests here check that pi2hop leaves the machine as it found it
// after any exit (SIGHUP, a broken stdout, SIGKILL then --cleanup), that
// instances share the sysctls they need, and that the app in a shell is
// the invoking user's, not root's.

// pi2hopForAll builds the binary into a folder anyone may read, so a
// command run as another user (nobody) can run it too.
func pi2hopForAll(t *testing.T) string {
	t.Helper()
	bin := buildPi2hop(t)
	for d := filepath.Dir(bin); d != os.TempDir() && d != "/"; d = filepath.Dir(d) {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return bin
}

func TestShellRunsAsTheInvokingUser(t *testing.T) {
	needRoot(t)
	name := testInstance(5)
	t.Cleanup(func() { cleanupInstance(name, nil, &bytes.Buffer{}) })
	t.Setenv("SUDO_UID", "65534")
	t.Setenv("SUDO_GID", "65534")
	t.Setenv("PI2HOP_TEST_SECRET", "root's")
	script := `id -u; id -g; grep CapEff /proc/self/status; echo "secret=${PI2HOP_TEST_SECRET-none} netns=$PI2HOP_NETNS user=$USER"`
	for _, tt := range []struct {
		flags []string
		want  string
		log   string
	}{
		{nil, "65534\n65534\nCapEff:\t0000000000000000\nsecret=none netns=" + name + "-shell user=nobody\n", "runs as nobody (uid 65534, gid 65534)"},
		{[]string{"--user", "nobody"}, "65534\n65534\nCapEff:\t0000000000000000\nsecret=none netns=" + name + "-shell user=nobody\n", "runs as nobody (uid 65534, gid 65534)"},
		{[]string{"--as-root"}, "0\n0\n", "runs as root (--as-root)"},
	} {
		var stdout, stderr bytes.Buffer
		args := append(append([]string{"shell", "--name", name}, tt.flags...), "--", "/bin/sh", "-c", script)
		if err := Run(context.Background(), args, strings.NewReader(""), &stdout, &stderr); err != nil {
			t.Fatalf("%q: %v\n%s", tt.flags, err, stderr.String())
		}
		if !strings.HasPrefix(stdout.String(), tt.want) {
			t.Errorf("shell %q printed %q, want it to start with %q", tt.flags, stdout.String(), tt.want)
		}
		if tt.flags != nil && tt.flags[0] == "--as-root" && !strings.Contains(stdout.String(), "secret=root's") {
			t.Errorf("--as-root: the environment is not root's: %q", stdout.String())
		}
		if !strings.Contains(stderr.String(), tt.log) {
			t.Errorf("shell %q: the start-up line does not say %s:\n%s", tt.flags, tt.log, stderr.String())
		}
		checkGone(t, name)
	}
}

// The app in the shell cannot reach the instance's control socket, so it
// cannot re-shape its own link.
func TestShellAppCannotUseTheControlSocket(t *testing.T) {
	needRoot(t)
	bin := pi2hopForAll(t)
	name := testInstance(6)
	t.Cleanup(func() { cleanupInstance(name, nil, &bytes.Buffer{}) })
	t.Setenv("SUDO_UID", "65534")
	t.Setenv("SUDO_GID", "65534")
	var stdout, stderr bytes.Buffer
	// The app tries both; the instance must still be running at 20mbit
	// afterwards.
	script := fmt.Sprintf("%s stats --name %s; echo stats=$?; %s set --name %s --rate 1gbit; echo set=$?", bin, name, bin, name)
	err := Run(context.Background(), []string{"shell", "--name", name, "--rate", "20mbit", "--", "/bin/sh", "-c", script},
		strings.NewReader(""), &stdout, &stderr)
	if err != nil {
		t.Fatalf("shell: %v\n%s", err, stderr.String())
	}
	out := stdout.String() + stderr.String()
	if !strings.Contains(out, "stats=1") || !strings.Contains(out, "set=1") || strings.Count(out, "permission denied") < 2 {
		t.Errorf("the app as nobody reached the control socket, or failed for another reason than permission:\n%s", out)
	}
	if strings.Contains(out, "changed") {
		t.Errorf("the app changed its own link:\n%s", out)
	}
	checkGone(t, name)
}

// proc is a pi2hop process a test drives: its stdout and stderr are pipes
// the test holds the read ends of.
type proc struct {
	t          *testing.T
	cmd        *exec.Cmd
	outR, errR *os.File
	mu         sync.Mutex
	stderr     bytes.Buffer
	running    chan struct{} // closed at the start-up line
	done       chan struct{} // closed when it exited
	state      *os.ProcessState
}

// startIn starts bin with args in network namespace ns ("" = ours):
// only the network namespace, so namespaces it makes are the host's.
func startIn(t *testing.T, ns, bin string, args ...string) *proc {
	t.Helper()
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &proc{t: t, outR: outR, errR: errR, running: make(chan struct{}), done: make(chan struct{})}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Stdout, p.cmd.Stderr = outW, errW
	if err := netsys.Do(ns, p.cmd.Start); err != nil {
		t.Fatal(err)
	}
	outW.Close()
	errW.Close()
	t.Cleanup(func() {
		p.cmd.Process.Kill()
		<-p.done
		outR.Close()
		errR.Close()
	})
	go func() {
		p.cmd.Wait()
		p.state = p.cmd.ProcessState
		close(p.done)
	}()
	go func() {
		go func() { bufio.NewReader(outR).WriteTo(&bytes.Buffer{}) }()
		sc := bufio.NewScanner(errR)
		seen := false
		for sc.Scan() {
			p.mu.Lock()
			p.stderr.WriteString(sc.Text() + "\n")
			p.mu.Unlock()
			// The start-up message's last line, or the JSON record.
			if !seen && (strings.HasPrefix(sc.Text(), "stats: ") || strings.HasPrefix(sc.Text(), "lab: run 1/") ||
				strings.Contains(sc.Text(), "pi2hop running")) {
				seen = true
				close(p.running)
			}
		}
	}()
	return p
}

func (p *proc) log() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stderr.String()
}

// waitRunning waits for the start-up line, then for cond (if not nil).
func (p *proc) waitRunning(what string, cond func() bool) {
	p.t.Helper()
	select {
	case <-p.running:
	case <-p.done:
		p.t.Fatalf("%s exited before its start-up line:\n%s", what, p.log())
	case <-time.After(20 * time.Second):
		p.t.Fatalf("%s: no start-up line within 20 s:\n%s", what, p.log())
	}
	deadline := time.Now().Add(20 * time.Second)
	for cond != nil && !cond() {
		if time.Now().After(deadline) {
			p.t.Fatalf("%s: not ready within 20 s of its start-up line:\n%s", what, p.log())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// endBy ends p the way how says: "SIGHUP", "SIGPIPE" (its stdout and
// stderr readers gone, then the signal a write to them would raise),
// "SIGTERM" or "SIGKILL", and waits for it to exit. Except after
// SIGKILL, it must have exited on its own, not died of the signal.
func (p *proc) endBy(what, how string) {
	p.t.Helper()
	var sig syscall.Signal
	switch how {
	case "SIGHUP":
		sig = syscall.SIGHUP
	case "SIGPIPE":
		p.outR.Close()
		p.errR.Close()
		sig = syscall.SIGPIPE
	case "SIGTERM":
		sig = syscall.SIGTERM
	case "SIGKILL":
		sig = syscall.SIGKILL
	default:
		p.t.Fatalf("endBy %q", how)
	}
	if err := p.cmd.Process.Signal(sig); err != nil {
		p.t.Fatalf("%s: %s: %v", what, how, err)
	}
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		p.t.Fatalf("%s did not exit within 30 s of %s:\n%s", what, how, p.log())
	}
	if ws, ok := p.state.Sys().(syscall.WaitStatus); ok && ws.Signaled() && sig != syscall.SIGKILL {
		p.t.Errorf("%s died of %v instead of cleaning up:\n%s", what, ws.Signal(), p.log())
	}
}

// snapshot describes what pi2hop may change in network namespace ns
// ("" = ours; then only the named things, as other tests share it):
// links, addresses, rules, routes of every table, nftables tables, the
// shared sysctls; in any case namespaces starting with one of names and
// those instances' state files and sockets.
func snapshot(t *testing.T, ns string, names ...string) string {
	t.Helper()
	var b strings.Builder
	if ns != "" {
		err := netsys.Do(ns, func() error {
			links, err := netlink.LinkList()
			if err != nil {
				return err
			}
			for _, l := range links {
				fmt.Fprintf(&b, "link %s\n", l.Attrs().Name)
				addrs, _ := netlink.AddrList(l, netlink.FAMILY_ALL)
				for _, a := range addrs {
					fmt.Fprintf(&b, "  addr %s\n", a.IPNet)
				}
			}
			rules, err := netlink.RuleList(netlink.FAMILY_ALL)
			if err != nil {
				return err
			}
			for _, r := range rules {
				fmt.Fprintf(&b, "rule %d pref %d iif %s table %d\n", r.Family, r.Priority, r.IifName, r.Table)
			}
			routes, err := netlink.RouteListFiltered(netlink.FAMILY_ALL, &netlink.Route{Table: unix.RT_TABLE_UNSPEC}, netlink.RT_FILTER_TABLE)
			if err != nil {
				return err
			}
			for _, r := range routes {
				if r.Table == unix.RT_TABLE_LOCAL || (r.Dst != nil && r.Dst.IP.IsLinkLocalUnicast()) {
					// The kernel's own, made from the addresses (listed
					// above) once a new link is ready: when, varies.
					continue
				}
				fmt.Fprintf(&b, "route %v dev %d table %d\n", r.Dst, r.LinkIndex, r.Table)
			}
			out, err := exec.Command("nft", "list", "tables").CombinedOutput()
			if err != nil {
				return fmt.Errorf("nft list tables: %v: %s", err, out)
			}
			fmt.Fprintf(&b, "nft %s\n", out)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"net/ipv4/ip_forward", "net/ipv6/conf/all/forwarding", "net/ipv4/conf/all/rp_filter"} {
			v, err := netsys.ReadSysctl(ns, k)
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&b, "%s=%s\n", k, v)
		}
	}
	ents, _ := os.ReadDir(netsys.NetnsDir)
	for _, e := range ents {
		for _, n := range names {
			if strings.HasPrefix(e.Name(), n) && e.Name() != ns && !slices.Contains(names, e.Name()) {
				fmt.Fprintf(&b, "netns %s\n", e.Name())
			}
		}
	}
	for _, n := range names {
		for _, f := range []string{instance.StatePath(n), instance.SocketPath(n)} {
			if _, err := os.Stat(f); err == nil {
				fmt.Fprintf(&b, "file %s\n", f)
			}
		}
	}
	return b.String()
}

// testHost is a namespace standing for the host, with ip_forward 0 as a
// fresh namespace has it, so a test sees what pi2hop changes and
// restores; an "outside" namespace hangs off it on a veth (10.254.250.2),
// standing for the network beyond.
type testHost struct {
	ns, outside string
	j           *netsys.Journal
}

func newTestHost(t *testing.T, prefix string) *testHost {
	t.Helper()
	h := &testHost{ns: prefix + "h", outside: prefix + "o", j: netsys.NewJournal(nil)}
	t.Cleanup(func() {
		if err := h.j.Undo(); err != nil {
			t.Errorf("test host cleanup: %v", err)
		}
	})
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(h.j.NewNamespace(h.ns))
	must(h.j.NewNamespace(h.outside))
	must(h.j.AddVeth(h.ns, "w0", h.outside, "x0"))
	must(h.j.AddAddr(h.ns, "w0", netip.MustParsePrefix("10.254.250.1/24")))
	must(h.j.AddAddr(h.outside, "x0", netip.MustParsePrefix("10.254.250.2/24")))
	for _, ns := range []string{h.ns, h.outside} {
		err := netsys.Do(ns, func() error {
			lo, err := netlink.LinkByName("lo")
			if err == nil {
				err = netlink.LinkSetUp(lo)
			}
			return err
		})
		must(err)
	}
	return h
}

// reachesOutside reports whether a TCP connection from namespace from
// reaches a server in the outside namespace and gets its greeting.
func (h *testHost) reachesOutside(t *testing.T, from string) bool {
	t.Helper()
	var ln net.Listener
	if err := netsys.Do(h.outside, func() (err error) { ln, err = net.Listen("tcp", "10.254.250.2:0"); return }); err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		fmt.Fprintf(c, "hello\n")
	}()
	var line string
	err := netsys.Do(from, func() error {
		c, err := net.DialTimeout("tcp", ln.Addr().String(), 3*time.Second)
		if err != nil {
			return err
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(3 * time.Second))
		line, err = bufio.NewReader(c).ReadString('\n')
		return err
	})
	return err == nil && line == "hello\n"
}

// appsIn lists the processes started by a shell with namespace ns (their
// environment says PI2HOP_NETNS=ns).
func appsIn(ns string) []int {
	var pids []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		var pid int
		if _, err := fmt.Sscanf(e.Name(), "%d", &pid); err != nil {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil {
			continue
		}
		if st, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); err == nil && strings.Contains(string(st), ") Z ") {
			continue // a zombie: gone, not yet reaped
		}
		if slices.Contains(strings.Split(string(env), "\x00"), "PI2HOP_NETNS="+ns) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// checkLeftAsBefore checks that instance name of command, ended by how,
// left namespace ns as the snapshot before it started; after SIGKILL
// there must first be something left, which the command's --cleanup
// removes.
func checkLeftAsBefore(t *testing.T, p *proc, how, ns, bin, command, name, before string) {
	t.Helper()
	if how == "SIGKILL" {
		if left := snapshot(t, ns, name); left == before {
			t.Fatal("SIGKILL left nothing to clean up; the test proves nothing")
		}
		runCleanup(t, ns, bin, command, name)
	}
	if after := snapshot(t, ns, name); after != before {
		t.Errorf("after %s:\n got %s\nwant %s\n%s", how, after, before, p.log())
	}
}

// runCleanup runs `pi2hop command --cleanup --name name` in namespace ns
// and fails t if it fails.
func runCleanup(t *testing.T, ns, bin, command, name string) {
	t.Helper()
	var out []byte
	err := netsys.Do(ns, func() (err error) {
		out, err = exec.Command(bin, command, "--cleanup", "--name", name).CombinedOutput()
		return err
	})
	if err != nil {
		t.Fatalf("%s --cleanup --name %s: %v\n%s", command, name, err, out)
	}
}

func ipForward(t *testing.T, ns string) string {
	t.Helper()
	v, err := netsys.ReadSysctl(ns, "net/ipv4/ip_forward")
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// Every way a `pi2hop shell --nat` can end leaves its host as it was:
// SIGHUP and a broken stdout clean up like SIGTERM; after SIGKILL,
// `pi2hop shell --cleanup` does.
func TestShellNATEndsLeaveNothing(t *testing.T) {
	needRoot(t, "nft")
	t.Parallel() // checks no timing: runs beside the others that check none
	bin := buildPi2hop(t)
	for i, how := range []string{"SIGHUP", "SIGPIPE", "SIGKILL"} {
		t.Run(how, func(t *testing.T) {
			name := testInstance(60 + i)
			h := newTestHost(t, name)
			t.Cleanup(func() { netsys.Do(h.ns, exec.Command(bin, "shell", "--cleanup", "--name", name).Run) })
			before := snapshot(t, h.ns, name)
			p := startIn(t, h.ns, bin, "shell", "--name", name, "--nat", "--rate", "50mbit", "--", "sleep", "300")
			p.waitRunning("shell --nat", nil)
			if !h.reachesOutside(t, name+"-shell") {
				t.Fatalf("the shell does not reach the outside through the NAT:\n%s", p.log())
			}
			p.endBy("shell --nat", how)
			// The command goes with pi2hop, however pi2hop ends.
			deadline := time.Now().Add(5 * time.Second)
			for len(appsIn(name+"-shell")) > 0 && time.Now().Before(deadline) {
				time.Sleep(20 * time.Millisecond)
			}
			if apps := appsIn(name + "-shell"); len(apps) > 0 {
				t.Errorf("the shell's command (pids %v) outlived pi2hop's end by %s by 5 s", apps, how)
				for _, pid := range apps {
					syscall.Kill(pid, syscall.SIGKILL)
				}
			}
			checkLeftAsBefore(t, p, how, h.ns, bin, "shell", name, before)
		})
	}
}

// Two NAT shells share the host's forwarding: when the first ends, the
// second still forwards, and after both ip_forward is what it was; the
// same when the first is killed and cleaned up, even when its state file
// was lost before the cleanup.
func TestTwoNATShellsShareForwarding(t *testing.T) {
	needRoot(t, "nft")
	t.Parallel() // checks no timing: runs beside the others that check none
	bin := buildPi2hop(t)
	for i, end := range []string{"SIGTERM", "SIGKILL", "SIGKILL, state file lost"} {
		t.Run(end, func(t *testing.T) {
			a, b := testInstance(20+2*i), testInstance(21+2*i)
			h := newTestHost(t, a)
			for _, n := range []string{a, b} {
				t.Cleanup(func() { netsys.Do(h.ns, exec.Command(bin, "shell", "--cleanup", "--name", n).Run) })
			}
			before := snapshot(t, h.ns, a, b)
			if v := ipForward(t, h.ns); v != "0" {
				t.Fatalf("a fresh namespace has ip_forward %s, want 0", v)
			}
			pa := startIn(t, h.ns, bin, "shell", "--name", a, "--nat", "--", "sleep", "300")
			pa.waitRunning("first shell", nil)
			pb := startIn(t, h.ns, bin, "shell", "--name", b, "--nat", "--", "sleep", "300")
			pb.waitRunning("second shell", nil)
			if !h.reachesOutside(t, a+"-shell") || !h.reachesOutside(t, b+"-shell") {
				t.Fatalf("the shells do not reach the outside:\n%s\n%s", pa.log(), pb.log())
			}
			pa.endBy("first shell", strings.TrimSuffix(strings.Fields(end)[0], ","))
			if strings.HasPrefix(end, "SIGKILL") {
				if strings.Contains(end, "lost") {
					if err := os.Remove(instance.StatePath(a)); err != nil {
						t.Fatal(err)
					}
				}
				runCleanup(t, h.ns, bin, "shell", a)
			}
			if v := ipForward(t, h.ns); v != "1" {
				t.Errorf("ip_forward %s after the first shell ended (%s), the second still needs 1", v, end)
			}
			if !h.reachesOutside(t, b+"-shell") {
				t.Errorf("the second shell stopped forwarding when the first ended (%s)", end)
			}
			pb.endBy("second shell", "SIGTERM")
			if after := snapshot(t, h.ns, a, b); after != before {
				t.Errorf("after both:\n got %s\nwant %s", after, before)
			}
		})
	}
	// A record left by a holder killed with its namespace names that
	// namespace by its inode number, which a new namespace may get: a
	// shell there must not count the dead holder as still needing
	// forwarding, or ip_forward would stay 1 after it.
	t.Run("a dead holder's record", func(t *testing.T) {
		name := testInstance(26)
		h := newTestHost(t, name)
		t.Cleanup(func() { netsys.Do(h.ns, exec.Command(bin, "shell", "--cleanup", "--name", name).Run) })
		before := snapshot(t, h.ns, name)
		var id string
		if err := netsys.Do(h.ns, func() error {
			var st syscall.Stat_t
			err := syscall.Stat("/proc/thread-self/ns/net", &st)
			id = fmt.Sprintf("net:%d:%d", st.Dev, st.Ino)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		dead := testInstance(27) // no state file: not running
		editRefs(t, func(refs map[string]any) {
			refs[id+":net/ipv4/ip_forward"] = map[string]any{"orig": "0", "holders": []string{dead}}
		})
		t.Cleanup(func() {
			editRefs(t, func(refs map[string]any) { delete(refs, id+":net/ipv4/ip_forward") })
		})
		p := startIn(t, h.ns, bin, "shell", "--name", name, "--nat", "--", "sleep", "300")
		p.waitRunning("the shell", nil)
		if v := ipForward(t, h.ns); v != "1" {
			t.Errorf("ip_forward %s while the NAT shell runs, want 1", v)
		}
		p.endBy("the shell", "SIGTERM")
		if after := snapshot(t, h.ns, name); after != before {
			t.Errorf("after the shell, beside a dead holder's record:\n got %s\nwant %s", after, before)
		}
	})
}

// editRefs changes the shared sysctls' record in the run folder under
// its lock, as instances do.
func editRefs(t *testing.T, f func(refs map[string]any)) {
	t.Helper()
	unlock, err := netsys.LockDir(instance.RunDir)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	path := filepath.Join(instance.RunDir, ".sysctls.json")
	refs := map[string]any{}
	if b, err := os.ReadFile(path); err == nil {
		if err := json.Unmarshal(b, &refs); err != nil {
			t.Fatal(err)
		}
	}
	f(refs)
	if len(refs) == 0 {
		os.Remove(path)
		return
	}
	b, err := json.Marshal(refs)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// Every way `pi2hop run` can end leaves the router as it was.
func TestGatewayEndsLeaveNothing(t *testing.T) {
	needRoot(t, "nft")
	t.Parallel() // checks no timing: runs beside the others that check none
	bin := buildPi2hop(t)
	for i, how := range []string{"SIGHUP", "SIGPIPE", "SIGKILL"} {
		t.Run(how, func(t *testing.T) {
			name := testInstance(30 + i)
			l := newGatewayLab(t, name)
			t.Cleanup(func() { netsys.Do(l.router, exec.Command(bin, "run", "--cleanup", "--name", name).Run) })
			before := snapshot(t, l.router, name)
			p := startIn(t, l.router, bin, "run", "--name", name, "--lan", "rl", "--wan", "rw", "--rate", "50mbit")
			p.waitRunning("run", nil)
			if got := l.transfer6(t, 64<<10); got != 64<<10 {
				t.Errorf("through the gateway: %d of %d bytes", got, 64<<10)
			}
			p.endBy("run", how)
			checkLeftAsBefore(t, p, how, l.router, bin, "run", name, before)
		})
	}
}

// Every way a lab can end leaves none of its namespaces or files; a
// start-up after a killed lab names the command that removes its
// leftovers.
func TestLabEndsLeaveNothing(t *testing.T) {
	needRoot(t)
	t.Parallel() // checks no timing: runs beside the others that check none
	bin := buildPi2hop(t)
	for i, how := range []string{"SIGHUP", "SIGPIPE", "SIGKILL"} {
		t.Run(how, func(t *testing.T) {
			name := labInstance(10 + i)
			t.Cleanup(func() { exec.Command(bin, "lab", "--cleanup", "--name", name).Run() })
			before := snapshot(t, "", name, instance.LabPrefix(name))
			p := startIn(t, "", bin, "lab", "l4s-demo", "--quick", "--name", name, "--out", filepath.Join(t.TempDir(), "report"))
			p.waitRunning("lab", func() bool { return len(labNamespaces(t, name)) == 2 })
			p.endBy("lab", how)
			if how == "SIGKILL" {
				if left := snapshot(t, "", name, instance.LabPrefix(name)); left == before {
					t.Fatal("SIGKILL left nothing to clean up; the test proves nothing")
				}
				// The next instance's start-up says how to remove them.
				var stderr bytes.Buffer
				other := labInstance(19)
				err := Run(context.Background(), []string{"shell", "--name", other, "--", "true"}, strings.NewReader(""), &bytes.Buffer{}, &stderr)
				if err != nil {
					t.Fatalf("shell: %v\n%s", err, stderr.String())
				}
				if want := "remove them with 'pi2hop lab --cleanup --name " + name + "'"; !strings.Contains(stderr.String(), want) {
					t.Errorf("the next start-up does not say %q:\n%s", want, stderr.String())
				}
				out, err := exec.Command(bin, "lab", "--cleanup", "--name", name).CombinedOutput()
				if err != nil {
					t.Fatalf("lab --cleanup: %v\n%s", err, out)
				}
			}
			if after := snapshot(t, "", name, instance.LabPrefix(name)); after != before {
				t.Errorf("after %s:\n got %s\nwant %s\n%s", how, after, before, p.log())
			}
		})
	}
}

// A state file whose PID now belongs to another process (started at
// another time) is stale: it neither blocks a start nor the cleanup.
func TestStaleStateFileWithReusedPID(t *testing.T) {
	needRoot(t)
	name := testInstance(40)
	t.Cleanup(func() { cleanupInstance(name, nil, &bytes.Buffer{}) })
	// Our parent is alive and started before us: its PID with our start
	// time names a process that is gone.
	start, err := instance.ProcStart(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if err := instance.WriteState(name, &instance.State{PID: os.Getppid(), Start: start, Command: "shell"}); err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	if err := Run(context.Background(), []string{"shell", "--name", name, "--", "true"}, strings.NewReader(""), &bytes.Buffer{}, &stderr); err != nil {
		t.Errorf("start over a stale state file: %v\n%s", err, stderr.String())
	}
	if err := instance.WriteState(name, &instance.State{PID: os.Getppid(), Start: start, Command: "shell",
		Entries: []netsys.Entry{{Kind: netsys.KindNetns, Name: name + "-shell"}}}); err != nil {
		t.Fatal(err)
	}
	err = Run(context.Background(), []string{"shell", "--name", name, "--", "true"}, strings.NewReader(""), &bytes.Buffer{}, &stderr)
	if want := "run 'pi2hop shell --cleanup --name " + name + "' first"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("start over a dead instance's leftovers: %v, want %q", err, want)
	}
	if err := cleanupInstance(name, nil, &bytes.Buffer{}); err != nil {
		t.Errorf("cleanup of a stale state file: %v", err)
	}
	if _, err := os.Stat(instance.StatePath(name)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the state file is still there after cleanup: %v", err)
	}
}

// Without a state file, the cleanup sweeps a gateway's rules only on the
// interfaces given: a rule of someone else's that happens to share the
// name's table and priority, on another interface, stays.
func TestGatewaySweepMatchesInterfaces(t *testing.T) {
	needRoot(t)
	t.Parallel() // checks no timing: runs beside the others that check none
	bin := buildPi2hop(t)
	name := testInstance(41)
	l := newGatewayLab(t, name)
	up, down, prio := topology.GatewayTables(name)
	leftover := netsys.NewJournal(nil) // what a killed gateway whose state file was lost left
	for _, r := range []netsys.Rule{{Family: 4, IIF: "rl", Table: up, Priority: prio}, {Family: 6, IIF: "rw", Table: down, Priority: prio}} {
		if err := leftover.AddRule(l.router, r); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { leftover.Undo() })
	if err := l.j.AddRule(l.router, netsys.Rule{Family: 4, IIF: "lo", Table: up, Priority: prio}); err != nil {
		t.Fatal(err)
	}
	rules := func() string {
		var b strings.Builder
		err := netsys.Do(l.router, func() error {
			rs, err := netlink.RuleList(netlink.FAMILY_ALL)
			for _, r := range rs {
				if r.Priority == prio {
					fmt.Fprintf(&b, "%d iif %s table %d; ", r.Family, r.IifName, r.Table)
				}
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	cleanup := func(args ...string) string {
		t.Helper()
		var out []byte
		err := netsys.Do(l.router, func() (err error) {
			out, err = exec.Command(bin, append([]string{"run", "--cleanup", "--name", name}, args...)...).CombinedOutput()
			return err
		})
		if err != nil {
			t.Fatalf("run --cleanup %q: %v\n%s", args, err, out)
		}
		return string(out)
	}
	all := fmt.Sprintf("2 iif rl table %d; 2 iif lo table %d; 10 iif rw table %d; ", up, up, down)
	if got := rules(); got != all {
		t.Fatalf("rules before: %s, want %s", got, all)
	}
	if out := cleanup(); !strings.Contains(out, "its policy rules, if any, are removed with --lan IF --wan IF too") || rules() != all {
		t.Errorf("run --cleanup without interfaces: rules %s, want all kept (%s), and a word on --lan/--wan:\n%s", rules(), all, out)
	}
	cleanup("--lan", "rl", "--wan", "rw")
	if got, want := rules(), fmt.Sprintf("2 iif lo table %d; ", up); got != want {
		t.Errorf("after run --cleanup --lan rl --wan rw: rules %s, want only the other one's: %s", got, want)
	}
}

// The shell's command inherits no device or socket of pi2hop's: with a
// TUN device it could write packets past the bottleneck. (Descriptors the
// test binary itself inherited from go test, /dev/null and pipes, pass on
// as they would from a shell.)
func TestShellAppInheritsNoDevice(t *testing.T) {
	needRoot(t)
	name := testInstance(42)
	t.Cleanup(func() { cleanupInstance(name, nil, &bytes.Buffer{}) })
	for _, flags := range [][]string{nil, {"--as-root"}} {
		var stdout, stderr bytes.Buffer
		// ls's own descriptors: the inherited ones, and the folder it reads.
		args := append(append([]string{"shell", "--name", name}, flags...), "--", "/bin/sh", "-c", "ls -l /proc/self/fd/ 2>&1")
		if err := Run(context.Background(), args, strings.NewReader(""), &stdout, &stderr); err != nil {
			t.Fatalf("%q: %v\n%s", flags, err, stderr.String())
		}
		var extra []string
		for _, line := range strings.Split(stdout.String(), "\n") {
			f := strings.Fields(line)
			if len(f) < 3 || f[len(f)-2] != "->" {
				continue
			}
			fd, target := f[len(f)-3], f[len(f)-1]
			if target == "/dev/net/tun" || strings.HasPrefix(target, "socket:") || strings.HasPrefix(target, "anon_inode:") {
				extra = append(extra, fd+" -> "+target)
			}
		}
		if len(extra) > 0 {
			t.Errorf("shell %q: the command inherited %q:\n%s", flags, extra, stdout.String())
		}
	}
}
