package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pi2hop/pi2hop/instance"
	"github.com/pi2hop/pi2hop/internal/hoststeal"
	"github.com/pi2hop/pi2hop/internal/labnet"
	"github.com/pi2hop/pi2hop/internal/ping"
	"github.com/pi2hop/pi2hop/netsys"
	"github.com/pi2hop/pi2hop/topology"
	"github.com/vishvananda/netlink"
)

// gatewayLab is client ─ veth ─ router ─ veth ─ server, three namespaces
// (labnet.Router, the router not forwarding by itself); pi2hop runs in the
// router between its two veths.
type gatewayLab struct {
	client, router, server string
	serverAddr             netip.Addr
	j                      *netsys.Journal
}

func newGatewayLab(t *testing.T, prefix string) *gatewayLab {
	t.Helper()
	j := netsys.NewJournal(nil)
	t.Cleanup(func() {
		if err := j.Undo(); err != nil {
			t.Errorf("lab cleanup: %v", err)
		}
	})
	r, err := labnet.NewRouter(j, prefix, false)
	if err != nil {
		t.Fatal(err)
	}
	return &gatewayLab{client: r.Client, router: r.Router, server: r.Server, serverAddr: r.ServerAddr, j: j}
}

// rateOver measures the IP rate the server received on s0 over d.
func (l *gatewayLab) rateOver(t *testing.T, d time.Duration) float64 {
	t.Helper()
	rate, err := labnet.RateOver(l.server, "s0", labnet.EthernetHeader, d)
	if err != nil {
		t.Fatal(err)
	}
	return rate
}

// bulk starts a TCP transfer client -> server that runs until the test ends.
func (l *gatewayLab) bulk(t *testing.T) {
	t.Helper()
	addr := netip.AddrPortFrom(l.serverAddr, 5002).String()
	var ln net.Listener
	if err := netsys.Do(l.server, func() (err error) { ln, err = net.Listen("tcp", addr); return }); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { io.Copy(io.Discard, c); c.Close() }()
		}
	}()
	var c net.Conn
	if err := netsys.Do(l.client, func() (err error) { c, err = net.DialTimeout("tcp", addr, 5*time.Second); return }); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	go func() {
		buf := make([]byte, 64<<10)
		for {
			if _, err := c.Write(buf); err != nil {
				return
			}
		}
	}()
}

// upInPackets asks the running instance how many packets its uplink read.
func upInPackets(t *testing.T, bin, name string) uint64 {
	t.Helper()
	out, err := exec.Command(bin, "stats", "--name", name, "--json").Output()
	if err != nil {
		t.Fatalf("pi2hop stats: %v", err)
	}
	var s struct {
		Dirs []struct {
			In uint64 `json:"in_packets"`
		} `json:"directions"`
	}
	if err := json.Unmarshal(out, &s); err != nil || len(s.Dirs) != 2 {
		t.Fatalf("pi2hop stats --json: %v\n%s", err, out)
	}
	return s.Dirs[0].In
}

// toRouter sends n bytes from the client to a TCP port of the router's
// own LAN address and returns what arrived.
func (l *gatewayLab) toRouter(t *testing.T, n int) int64 {
	t.Helper()
	return sendTCP(t, l.client, l.router, "tcp", "10.254.10.1:5007", n, 5*time.Second)
}

// transfer6 sends n bytes client -> server over IPv6 TCP and returns what
// arrived.
func (l *gatewayLab) transfer6(t *testing.T, n int) int64 {
	t.Helper()
	return sendTCP(t, l.client, l.server, "tcp6", "[fd00:254:20::2]:5006", n, 10*time.Second)
}

// sendTCP listens on addr in namespace to, connects from namespace from,
// sends n bytes and returns how many the listener received within wait.
func sendTCP(t *testing.T, from, to, network, addr string, n int, wait time.Duration) int64 {
	t.Helper()
	var ln net.Listener
	if err := netsys.Do(to, func() (err error) { ln, err = net.Listen(network, addr); return }); err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	got := make(chan int64, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- 0
			return
		}
		defer c.Close()
		c.SetReadDeadline(time.Now().Add(wait))
		m, _ := io.Copy(io.Discard, c)
		got <- m
	}()
	var c net.Conn
	if err := netsys.Do(from, func() (err error) { c, err = net.DialTimeout(network, addr, 5*time.Second); return }); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write(make([]byte, n)); err != nil {
		t.Fatal(err)
	}
	c.Close()
	return <-got
}

// routerState is what gateway mode changes in the router namespace.
func (l *gatewayLab) routerState(t *testing.T, name string) string {
	t.Helper()
	var b strings.Builder
	for _, k := range []string{"net/ipv4/ip_forward", "net/ipv6/conf/all/forwarding", "net/ipv4/conf/all/rp_filter"} {
		v, err := netsys.ReadSysctl(l.router, k)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%s=%s ", k, v)
	}
	_, _, prio := topology.GatewayTables(name)
	err := netsys.Do(l.router, func() error {
		rules, err := netlink.RuleList(netlink.FAMILY_ALL)
		if err != nil {
			return err
		}
		for _, r := range rules {
			if r.Priority == prio {
				fmt.Fprintf(&b, "rule(%d iif %s table %d) ", r.Family, r.IifName, r.Table)
			}
		}
		links, err := netlink.LinkList()
		if err != nil {
			return err
		}
		for _, ln := range links {
			if strings.HasPrefix(ln.Attrs().Name, name) {
				fmt.Fprintf(&b, "link(%s) ", ln.Attrs().Name)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(instance.StatePath(name)); err == nil {
		b.WriteString("statefile ")
	}
	return b.String()
}

// startGateway runs `pi2hop run` in the router and waits for its socket.
func (l *gatewayLab) startGateway(t *testing.T, bin, name string, extra ...string) *exec.Cmd {
	t.Helper()
	cmd, _ := startInstance(t, bin, l.router, name, 10*time.Second, "", append([]string{"run", "--name", name, "--lan", "rl", "--wan", "rw"}, extra...)...)
	return cmd
}

func TestGatewayRateSetAndCleanup(t *testing.T) {
	needRoot(t, "ip") // for 'ip netns exec'

	bin := buildPi2hop(t)
	name := testInstance(3)
	l := newGatewayLab(t, name)
	before := l.routerState(t, name)
	t.Cleanup(func() { exec.Command("ip", "netns", "exec", l.router, bin, "run", "--cleanup", "--name", name).Run() })

	cmd := l.startGateway(t, bin, name, "--rate", "20mbit")
	got := l.routerState(t, name)
	for _, want := range []string{"rule(2 iif rl", "rule(2 iif rw", "rule(10 iif rl", "rule(10 iif rw", "link(" + name + "-up)", "link(" + name + "-dn)"} {
		if !strings.Contains(got, want) { // families: AF_INET 2, AF_INET6 10
			t.Fatalf("gateway state lacks %s: %s", want, got)
		}
	}
	// Traffic to the router itself stays out of the bottleneck.
	in0 := upInPackets(t, bin, name)
	if got := l.toRouter(t, 200<<10); got != 200<<10 {
		t.Errorf("to the router itself: %d of %d bytes arrived", got, 200<<10)
	}
	if in1 := upInPackets(t, bin, name); in1-in0 > 10 {
		t.Errorf("200 kB to the router's own address went through the hop (%d packets)", in1-in0)
	}

	// One window, no second try: 8 s, long enough that an ordinary stall
	// of the endpoints costs little of it, with what the host steals
	// taken off the 95 % floor one for one, as package hop's TCP-rate
	// tests do (checkTCPRate says why that is the most a stolen ms costs).
	l.bulk(t)
	time.Sleep(time.Second)
	const window = 8 * time.Second
	steal0 := hoststeal.Total()
	rate := l.rateOver(t, window)
	floor := 0.95
	steal := hoststeal.Total() - steal0
	if steal0 >= 0 && steal > 0 {
		floor -= steal.Seconds() / window.Seconds()
	}
	t.Logf("TCP through the gateway at 20 Mbit/s: %.2f Mbit/s IP at the receiver (%.2f %%, floor %.2f %%; host steal %v in %v)", rate/1e6, rate/20e6*100, 100*floor, steal, window)
	if rate < floor*20e6 || rate > 1.005*20e6 {
		t.Errorf("gateway rate %.0f bit/s, want %.2f..100.5 %% of 20 Mbit/s (95 %% less host steal)", rate, 100*floor)
	}

	if got := l.transfer6(t, 1<<20); got != 1<<20 {
		t.Errorf("IPv6 through the gateway: %d of %d bytes arrived", got, 1<<20)
	}

	out, err := exec.Command(bin, "set", "--name", name, "--up-rate", "10mbit").CombinedOutput()
	if err != nil {
		t.Fatalf("pi2hop set: %v\n%s", err, out)
	}
	time.Sleep(time.Second)
	rate = l.rateOver(t, time.Second)
	t.Logf("one second after set --up-rate 10mbit: %.2f Mbit/s", rate/1e6)
	if rate < 0.9*10e6 || rate > 1.01*10e6 {
		t.Errorf("rate %.0f bit/s in the second after set, want 90..101 %% of 10 Mbit/s", rate)
	}
	if out, err := exec.Command(bin, "stats", "--name", name).CombinedOutput(); err != nil || !strings.Contains(string(out), "rate 10Mbit") {
		t.Errorf("stats after set: %v\n%s", err, out)
	}

	cmd.Process.Signal(syscall.SIGTERM)
	if err := waitExit(t, cmd, 10*time.Second); err != nil {
		t.Errorf("pi2hop run after SIGTERM: %v", err)
	}
	if after := l.routerState(t, name); after != before {
		t.Errorf("after SIGTERM:\n got %s\nwant %s", after, before)
	}

	cmd = l.startGateway(t, bin, name)
	cmd.Process.Kill()
	waitExit(t, cmd, 10*time.Second)
	if left := l.routerState(t, name); left == before {
		t.Errorf("SIGKILL left nothing to clean up; the test proves nothing")
	}
	out, err = exec.Command("ip", "netns", "exec", l.router, bin, "run", "--cleanup", "--name", name).CombinedOutput()
	if err != nil {
		t.Fatalf("run --cleanup: %v\n%s", err, out)
	}
	if after := l.routerState(t, name); after != before {
		t.Errorf("after SIGKILL and --cleanup:\n got %s\nwant %s\n%s", after, before, out)
	}
}

// waitExit waits at most d for cmd, started earlier, to exit and returns
// its exit error; a process still running after d fails the test (and is
// killed), so a hang at shutdown shows here, not at the suite's timeout.
func waitExit(t *testing.T, cmd *exec.Cmd, d time.Duration) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(d):
		cmd.Process.Kill()
		<-done
		t.Fatalf("%s still running %v after it was told to stop", cmd.Path, d)
		return nil
	}
}

// The idle RTT `pi2hop run` adds (gateway mode): pings from the client to
// the server through the router, first forwarded by the router's kernel
// alone, then through the hop with --delay 5ms each way. The figure is
// logged beside the kernel path's; the bound is the one TestPairIdleRTT
// derives, over 1 ms added means a release missed its time. Measured
// figures, and how much the machine moves them, are in
// docs/performance.md.
func TestGatewayIdleRTT(t *testing.T) {
	needRoot(t, "ip")
	bin := buildPi2hop(t)
	name := testInstance(50)
	l := newGatewayLab(t, name)
	t.Cleanup(func() { exec.Command("ip", "netns", "exec", l.router, bin, "run", "--cleanup", "--name", name).Run() })
	dsts := []netip.Addr{l.serverAddr, netip.MustParseAddr("fd00:254:20::2")}
	for _, kv := range [][2]string{{"net/ipv4/ip_forward", "1"}, {"net/ipv6/conf/all/forwarding", "1"}} {
		if err := l.j.SetSysctl(l.router, kv[0], kv[1]); err != nil {
			t.Fatal(err)
		}
	}
	measure := func(dst netip.Addr) ping.Idle {
		t.Helper()
		if _, err := ping.Median(l.client, dst, 3, 10*time.Millisecond); err != nil { // warm up: neighbours
			t.Fatalf("ping %v: %v", dst, err)
		}
		m, err := ping.Measure(l.client, dst, 60, 10*time.Millisecond)
		if err != nil {
			t.Fatalf("ping %v: %v", dst, err)
		}
		return m
	}
	var kernel [2]time.Duration
	for i, dst := range dsts {
		kernel[i] = measure(dst).Median
	}
	const delay = 5 * time.Millisecond
	cmd := l.startGateway(t, bin, name, "--rate", "100mbit", "--delay", delay.String())
	for i, dst := range dsts {
		m := measure(dst)
		added := m.Median - 2*delay
		t.Logf("idle RTT through run to %v with --delay %v: median %v (added %v; the router's kernel path alone %v, so the hop's own part %v; host steal %v; issue 10's target 0.15 ms added)",
			dst, delay, m.Median, added, kernel[i], added-kernel[i], m.Steal)
		// 1 ms, and what the host's steal can explain (TestPairIdleRTT).
		if bound := time.Millisecond + m.StealAllowance(); added < 0 || added > bound {
			t.Errorf("idle RTT through run to %v: %v, want %v + at most %v (1 ms and what the host's steal of %v explains)", dst, m.Median, 2*delay, bound, m.Steal)
		}
	}
	cmd.Process.Signal(syscall.SIGTERM)
	if err := waitExit(t, cmd, 10*time.Second); err != nil {
		t.Errorf("pi2hop run after SIGTERM: %v", err)
	}
}
