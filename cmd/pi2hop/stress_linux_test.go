package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/pi2hop/pi2hop/instance"
)

// The stress suite: a running instance under a crowd of connections and
// requests, and every file reader against input without end. make test
// runs each test at its quick size; make stress (-stress) at the full
// one. Each test logs its figures on a line starting "figures:"
// (docs/performance.md quotes them).
var stressFull = flag.Bool("stress", false, "run the stress tests at full size (make stress)")

// stressSize is quick in make test, full under make stress.
func stressSize(quick, full int) int {
	if *stressFull {
		return full
	}
	return quick
}

// procMem is a process's resident memory now and at its peak, and its
// open fds, from /proc.
type procMem struct{ rss, hwm, fds int }

func readProcMem(t *testing.T, pid int) procMem {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatalf("instance's /proc status: %v", err)
	}
	var m procMem
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		kb, _ := strconv.Atoi(f[1])
		switch f[0] {
		case "VmRSS:":
			m.rss = kb << 10
		case "VmHWM:":
			m.hwm = kb << 10
		}
	}
	fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	m.fds = len(fds)
	return m
}

func mb(n int) string { return fmt.Sprintf("%.1f MB", float64(n)/(1<<20)) }

// stressShell starts a shell instance name that runs until the test ends,
// with more flags before the command; prefix runs it under a wrapper
// (prlimit). It returns the instance's pid once its control socket
// answers.
func stressShell(t *testing.T, name string, prefix, flags []string) (*proc, int) {
	t.Helper()
	bin := buildPi2hop(t)
	t.Cleanup(func() { exec.Command(bin, "shell", "--cleanup", "--name", name).Run() })
	args := append(append(append(prefix, bin, "shell", "--name", name, "--rate", "10mbit"), flags...), "--", "sleep", "3600")
	p := startIn(t, "", args[0], args[1:]...)
	p.waitRunning("shell", func() bool { _, err := instance.Stats(name); return err == nil })
	return p, p.cmd.Process.Pid
}

// rawStats sends one stats request on a connection of its own and says
// whether a snapshot came back, reading the answer without keeping it.
func rawStats(name string) error {
	c, err := net.DialTimeout("unix", instance.SocketPath(name), 10*time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := c.Write([]byte(`{"op":"stats"}` + "\n")); err != nil {
		return err
	}
	var resp struct {
		Error string          `json:"error"`
		Stats json.RawMessage `json:"stats"`
	}
	if err := json.NewDecoder(c).Decode(&resp); err != nil {
		return err
	}
	if resp.Error != "" || len(resp.Stats) == 0 {
		return fmt.Errorf("answer without stats: %q", resp.Error)
	}
	return nil
}

// TestStressConcurrentStats sends batches of 500 stats requests at once
// to a running instance: every one is answered, and no batch raises the
// instance's peak RSS by more than 50 MB (each request once cost a
// snapshot's worth of stack and heap, and 500 took RSS from 33 MB to
// 600 MB). Over many batches RSS levels off where the garbage collector's
// goal lies, twice the live heap, most of which is the packet buffers.
func TestStressConcurrentStats(t *testing.T) {
	needRoot(t, "sleep")
	name := testInstance(192)
	p, pid := stressShell(t, name, nil, nil)
	const perBatch, maxRise = 500, 50 << 20
	batches := stressSize(1, 6)
	start := readProcMem(t, pid)
	failed := 0
	var firstErr error
	before := start
	for b := 0; b < batches; b++ {
		var wg sync.WaitGroup
		var mu sync.Mutex
		gate := make(chan struct{})
		for i := 0; i < perBatch; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-gate
				if err := rawStats(name); err != nil {
					mu.Lock()
					failed++
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
				}
			}()
		}
		t0 := time.Now()
		close(gate)
		wg.Wait()
		m := readProcMem(t, pid)
		t.Logf("batch %d: %d requests in %v, RSS %s, peak %s, fds %d", b+1, perBatch, time.Since(t0).Round(time.Millisecond), mb(m.rss), mb(m.hwm), m.fds)
		if rise := m.hwm - before.rss; rise > maxRise {
			t.Errorf("batch %d: peak RSS %s, %s above the RSS before it: want at most %s", b+1, mb(m.hwm), mb(rise), mb(maxRise))
		}
		before = m
	}
	end := readProcMem(t, pid)
	t.Logf("figures: %d x %d concurrent stats: RSS start %s, max %s, end %s; fds %d -> %d; failed requests %d",
		batches, perBatch, mb(start.rss), mb(end.hwm), mb(end.rss), start.fds, end.fds, failed)
	if failed > 0 {
		t.Errorf("%d of %d requests failed, first: %v\n%s", failed, batches*perBatch, firstErr, p.log())
	}
}

// holdConns makes n dials (concurrently, each within a short deadline)
// and returns the connections it got and how many dials were turned away.
// Each dial is made once: one the instance's cap or fd limit turns away
// is what the stress tests measure, and is counted.
func holdConns(n int, dial func() (net.Conn, error)) (held []net.Conn, refused int) {
	var mu sync.Mutex
	var next, turnedAway atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < 32; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(n) {
				if c, err := dial(); err == nil {
					mu.Lock()
					held = append(held, c)
					mu.Unlock()
				} else {
					turnedAway.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	return held, int(turnedAway.Load())
}

// A holder is a second process of this test binary that holds
// connections: each process may open only so many fds (its hard limit,
// which a container's root may not raise), so 20 000 connections take a
// few.
const (
	holdAddrEnv = "PI2HOP_TEST_HOLD_ADDR"
	holdNEnv    = "PI2HOP_TEST_HOLD_N"
	perHolder   = 10000
)

// init runs a holder when the environment says so: it dials its share of
// connections to the address, prints "held N refused M", keeps them until its
// standard input closes, then exits.
func init() {
	addr := os.Getenv(holdAddrEnv)
	if addr == "" {
		return
	}
	n, _ := strconv.Atoi(os.Getenv(holdNEnv))
	held, refused := holdConns(n, func() (net.Conn, error) { return net.DialTimeout("tcp", addr, time.Second) })
	fmt.Printf("held %d refused %d\n", len(held), refused)
	io.Copy(io.Discard, os.Stdin)
	os.Exit(0)
}

// holdersConns holds n connections to addr from holder processes and
// returns how many they got and a function that releases them all.
func holdersConns(t *testing.T, addr string, n int) (int, func()) {
	t.Helper()
	var stdins []io.Closer
	var cmds []*exec.Cmd
	release := func() {
		for _, w := range stdins {
			w.Close()
		}
		for _, c := range cmds {
			done := make(chan struct{})
			go func() { c.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				c.Process.Kill()
				t.Errorf("a connection holder did not exit within 10 s of its release")
			}
		}
	}
	total, refused := 0, 0
	for left := n; left > 0; left -= perHolder {
		c := exec.Command(os.Args[0])
		c.Env = append(os.Environ(), holdAddrEnv+"="+addr, fmt.Sprintf("%s=%d", holdNEnv, min(left, perHolder)))
		in, err := c.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		out, err := c.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		stdins, cmds = append(stdins, in), append(cmds, c)
		line := make(chan string, 1)
		go func() {
			l, _ := bufio.NewReader(out).ReadString('\n')
			line <- l
		}()
		select {
		case l := <-line:
			var k, r int
			if _, err := fmt.Sscanf(l, "held %d refused %d", &k, &r); err != nil {
				release()
				t.Fatalf("connection holder said %q", l)
			}
			total, refused = total+k, refused+r
		case <-time.After(2 * time.Minute):
			release()
			t.Fatalf("a connection holder did not report within 2 minutes")
		}
	}
	t.Logf("%d connections held, %d dials turned away", total, refused)
	return total, release
}

// freePort is test n's TCP port on loopback, one nothing listens on now.
func freePort(t *testing.T, n int) int {
	t.Helper()
	// Below the kernel's range of ephemeral ports, so that no connection
	// of another test (or of this one) takes it between the check and a
	// server's bind; n, the test's instance number, keeps the tests'
	// ports apart.
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		t.Fatal(err)
	}
	var lo int
	if _, err := fmt.Sscan(string(b), &lo); err != nil {
		t.Fatalf("ip_local_port_range %q: %v", b, err)
	}
	port := lo - 256 + n
	if n < 0 || n >= 256 || port <= 1024 {
		t.Fatalf("no test port %d below the ephemeral ports from %d", n, lo)
	}
	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		t.Fatalf("test port %d: %v", port, err)
	}
	ln.Close()
	return port
}

// statsWithin times one stats request, which must be answered within d.
func statsWithin(t *testing.T, name string, d time.Duration, what string) time.Duration {
	t.Helper()
	t0 := time.Now()
	err := rawStats(name)
	took := time.Since(t0)
	if err != nil || took > d {
		t.Errorf("%s: stats took %v (%v), want an answer within %v", what, took.Round(time.Millisecond), err, d)
	}
	return took
}

// TestStressWebConnections holds many idle connections on the web view's
// port, which needs no token to open, then releases them: the view's cap
// closes those beyond it at once, so the instance's fds stay bounded, and
// stats answers within 1 s after.
func TestStressWebConnections(t *testing.T) {
	needRoot(t, "sleep")
	n := stressSize(2000, 20000)
	name := testInstance(193)
	port := freePort(t, 193)
	p, pid := stressShell(t, name, nil, []string{fmt.Sprintf("--web=127.0.0.1:%d", port)})
	start := readProcMem(t, pid)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	held, release := holdersConns(t, addr, n)
	during := readProcMem(t, pid)
	release()
	took := statsWithin(t, name, time.Second, fmt.Sprintf("after %d web connections", held))
	conns := connStats(t, name)
	end := readProcMem(t, pid)
	t.Logf("figures: %d web connections held (%d asked): instance fds %d -> %d while held -> %d; RSS start %s, max %s, end %s; "+
		"web refused %d, failed accepts %d; stats after release %v",
		held, n, start.fds, during.fds, end.fds, mb(start.rss), mb(end.hwm), mb(end.rss), conns.Web.Refused, conns.Web.AcceptErrors,
		took.Round(time.Millisecond))
	if held < n*9/10 {
		t.Errorf("held %d of %d connections: the view stopped taking them", held, n)
	}
	if lim := start.fds + 256 + 64; during.fds > lim {
		t.Errorf("%d fds while %d connections were held: want at most %d (the view's cap of 256 and some)", during.fds, held, lim)
	}
	if conns.Web.Refused == 0 {
		t.Errorf("no web connection counted as refused after %d held:\n%s", held, p.log())
	}
}

// connStats is the instance's connection counters, from stats --json.
func connStats(t *testing.T, name string) instance.ConnStats {
	t.Helper()
	out, err := exec.Command(buildPi2hop(t), "stats", "--json", "--name", name).Output()
	if err != nil {
		t.Fatalf("stats --json: %v", err)
	}
	var s struct {
		Conns *instance.ConnStats `json:"conns"`
	}
	if err := json.Unmarshal(out, &s); err != nil || s.Conns == nil {
		t.Fatalf("stats --json: no conns (%v):\n%s", err, out)
	}
	return *s.Conns
}

// TestStressFDExhaustion runs the instance with 200 fds, fewer than its
// servers' caps, and holds connections on the web port and on the control
// socket until it is out of fds: the accept loops back off and accept
// on, and once the connections are released stats answers within 1 s.
// The failed accepts counted prove the exhaustion was real.
func TestStressFDExhaustion(t *testing.T) {
	needRoot(t, "sleep", "prlimit")
	const limit = 200
	for i, target := range []string{"web", "control"} {
		t.Run(target, func(t *testing.T) {
			name := testInstance(92 + i)
			port := freePort(t, 92+i)
			p, pid := stressShell(t, name, []string{"prlimit", fmt.Sprintf("--nofile=%d:%d", limit, limit), "--"},
				[]string{fmt.Sprintf("--web=127.0.0.1:%d", port)})
			start := readProcMem(t, pid)
			dial := func() (net.Conn, error) {
				return net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), 500*time.Millisecond)
			}
			if target == "control" {
				dial = func() (net.Conn, error) {
					return net.DialTimeout("unix", instance.SocketPath(name), 500*time.Millisecond)
				}
			}
			// Twice the limit: the instance takes what its fds allow, the
			// rest wait in the listen backlog.
			held, refused := holdConns(2*limit, dial)
			deadline := time.Now().Add(10 * time.Second)
			var during procMem
			for {
				during = readProcMem(t, pid)
				if during.fds >= limit-1 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("instance at %d fds of %d within 10 s of %d connections: not exhausted", during.fds, limit, len(held))
				}
				time.Sleep(10 * time.Millisecond)
			}
			// Give the accept loops time to fail and back off.
			time.Sleep(500 * time.Millisecond)
			for _, c := range held {
				c.Close()
			}
			took := statsWithin(t, name, time.Second, fmt.Sprintf("after exhaustion via %s", target))
			conns := connStats(t, name)
			end := readProcMem(t, pid)
			s := conns.Web
			if target == "control" {
				s = conns.Control
			}
			t.Logf("figures: %s, RLIMIT_NOFILE %d, %d connections held: fds %d -> %d -> %d; RSS start %s, max %s, end %s; "+
				"failed accepts %d, refused %d, dials turned away %d; stats after release %v",
				target, limit, len(held), start.fds, during.fds, end.fds, mb(start.rss), mb(end.hwm), mb(end.rss), s.AcceptErrors, s.Refused, refused,
				took.Round(time.Millisecond))
			if s.AcceptErrors == 0 {
				t.Errorf("%s: no failed accept counted: the instance did not run out of fds\n%s", target, p.log())
			}
			if strings.Contains(p.log(), "http: Accept error") { // net/http's own line for a failed accept
				t.Errorf("net/http's accept error reached the standard error:\n%s", p.log())
			}
			// The instance's own line, at most one per 10 s.
			var lines []string
			for _, l := range strings.Split(p.log(), "\n") {
				if strings.Contains(l, "accept failed") {
					lines = append(lines, l)
				}
			}
			t.Logf("the instance's log of it: %q", lines)
			if want := fmt.Sprintf("open files limited to %d", limit); strings.Count(p.log(), want) != 1 {
				t.Errorf("the instance's log says %q %d times, want once:\n%s", want, strings.Count(p.log(), want), p.log())
			}
			if len(lines) != 1 {
				t.Errorf("%d log lines of failed accepts within a few seconds, want 1 (one per 10 s):\n%s", len(lines), p.log())
			}
		})
	}
}

// A measurer is a second process of this test binary that runs one
// command and reports how it ended: a child's peak RSS (wait4's
// ru_maxrss) starts from its parent's, since exec records the high-water
// mark of the memory it replaces and os/exec's child shares the parent's
// until then.
// This test process grows with the tests before TestStressReaders; a
// measurer, which runs no test, is a few MB, so the readers' figures are
// bounded by that, not by the whole suite.
const measureArgsEnv = "PI2HOP_TEST_MEASURE_ARGS"

// measured is how the measurer's command ended.
type measured struct {
	Code   int    `json:"code"`    // exit status, -1 when it did not exit
	MaxRSS int    `json:"max_rss"` // bytes
	Stderr string `json:"stderr"`
	Ms     int64  `json:"ms"`
}

// init runs a measurer when the environment says so: the command is the
// JSON array in it; how it ended goes to standard output as JSON.
func init() {
	js := os.Getenv(measureArgsEnv)
	if js == "" {
		return
	}
	var args []string
	if err := json.Unmarshal([]byte(js), &args); err != nil || len(args) == 0 {
		fmt.Fprintf(os.Stderr, "measurer: %s: want a JSON array of the command and its arguments\n", measureArgsEnv)
		os.Exit(2)
	}
	var stderr bytes.Buffer
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stderr = &stderr
	t0 := time.Now()
	err := cmd.Run()
	m := measured{Code: -1, Stderr: stderr.String(), Ms: time.Since(t0).Milliseconds()}
	var ee *exec.ExitError
	if err == nil || errors.As(err, &ee) {
		m.Code = cmd.ProcessState.ExitCode()
		m.MaxRSS = int(cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss << 10) // Linux: KiB
	} else {
		m.Stderr = err.Error()
	}
	json.NewEncoder(os.Stdout).Encode(m)
	os.Exit(0)
}

// measure runs args in a measurer and returns how they ended.
func measure(t *testing.T, args ...string) measured {
	t.Helper()
	js, _ := json.Marshal(args)
	c := exec.Command(os.Args[0])
	c.Env = append(os.Environ(), measureArgsEnv+"="+string(js))
	out, err := c.Output()
	var m measured
	if err != nil || json.Unmarshal(out, &m) != nil {
		t.Fatalf("measurer of %q: %v\n%s", args, err, out)
	}
	return m
}

// TestStressReaders feeds every file reader input without end (/dev/zero)
// and a 1 GB sparse file under a 2 GB address-space limit: each command
// exits 1 with the limit or the format named, its peak RSS under 100 MB.
// The limit is 2 GB, not 1: under 1 GB the Go runtime's own address
// space reservations fail now and then before any input is read ("out
// of memory: cannot allocate 4194304-byte block" with 3.7 MB in use),
// and a reader that took the 1 GB file whole would outgrow that limit.
func TestStressReaders(t *testing.T) {
	needRoot(t, "prlimit")
	bin := buildPi2hop(t)
	dir := t.TempDir()
	sparse := filepath.Join(dir, "sparse")
	f, err := os.Create(sparse)
	if err != nil {
		t.Fatal(err)
	}
	f.Truncate(1 << 30)
	f.Close()
	trace := filepath.Join(dir, "t.csv")
	os.WriteFile(trace, []byte("time_ns,bytes,ecn\n0,1500,1\n"), 0o644)
	const maxRSS = 100 << 20
	line := "longer than 65536 bytes"
	notPcap := "not a pcap or pcapng capture"
	name := testInstance(95)
	t.Cleanup(func() { exec.Command(bin, "shell", "--cleanup", "--name", name).Run() })
	for _, in := range []string{"/dev/zero", sparse} {
		for _, r := range []struct {
			args []string
			want string
		}{
			{[]string{"replay", "--trace", in}, line},
			{[]string{"replay", "--trace", trace, "--rate-trace", in}, line + ", the limit for a line"},
			{[]string{"replay", "--pcap", in}, notPcap},
			{[]string{"analyze", in}, notPcap},
			{[]string{"shell", "--name", name, "--rate-trace", in, "--", "true"}, line + ", the limit for a line"},
		} {
			m := measure(t, append([]string{"prlimit", "--as=2000000000", "--", bin}, r.args...)...)
			what := strings.Join(r.args, " ")
			t.Logf("figures: %s: exit %d in %d ms, peak RSS %s: %s", what, m.Code, m.Ms, mb(m.MaxRSS), strings.TrimSpace(m.Stderr))
			if m.Code != 1 || !strings.Contains(m.Stderr, r.want) {
				t.Errorf("%s: exit %d, stderr %q; want exit 1 and %q", what, m.Code, m.Stderr, r.want)
			}
			if m.MaxRSS > maxRSS {
				t.Errorf("%s: peak RSS %s, want under %s", what, mb(m.MaxRSS), mb(maxRSS))
			}
		}
	}
}
