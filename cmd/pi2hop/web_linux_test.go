//go:build !race

// Browser tests need Debian's chromium (Linux). They are root or long
// tests, which the -short race step skips anyway: left out of the race
// build, it need not compile the DevTools protocol packages.

package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/flow"
	"github.com/pi2hop/pi2hop/flow/ecnudp"
	"github.com/pi2hop/pi2hop/instance"
	"github.com/pi2hop/pi2hop/netsys"
)

// The browser view of a live shell, listening beyond loopback with a
// token (a request without it is refused), in headless Chromium: three flows
// from the host into the shell at once (an ECT(1) Prague flow, a Not-ECT
// TCP flow, an ECT(0) UDP flow) are in the page's flow table with their
// classes within 2 s of the page opening, the throughput chart has points
// from the last second, and its Throttle button changes the running hop's
// rate, as `stats` then shows, within a second. The screenshot is a test
// artifact (go test -artifacts keeps it) and, with $PI2HOP_WEB_SHOTS set,
// is written there (docs/web.png is one).
func TestShellWebInBrowser(t *testing.T) {
	needRoot(t, "bash", "chromium")
	t.Parallel() // it measures no timing of the hop
	start := time.Now()
	name := testInstance(160) // 60..62 are TestShellNATEndsLeaveNothing's
	t.Cleanup(func() { cleanupInstance(name, nil, &bytes.Buffer{}) })
	// The view listens beyond loopback, so every request must carry the
	// token; the test reaches it through 127.0.0.1, on the port the
	// system gave it (port 0), which the start-up line names: a port
	// found free and closed again could be taken by another test's
	// connection before the shell binds it.
	const token = "b3d9c0ffee"
	const addr = "0.0.0.0:0"

	// Bash alone: the shell's command says where it is and waits for
	// the test's stop file (read -t is the pause); the traffic comes from
	// the host, with receivers in the shell's namespace.
	dir := t.TempDir()
	envFile, stopFile := filepath.Join(dir, "env"), filepath.Join(dir, "stop")
	script := fmt.Sprintf(`echo $PI2HOP_ADDR end > %s; while [ ! -e %s ]; do read -t 0.05 <> <(:) || :; done`, envFile, stopFile)
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	path, _ := exec.LookPath("chromium")
	actx, acancel := chromedp.NewExecAllocator(ctx, append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path), chromedp.NoSandbox, chromedp.WindowSize(1400, 1000))...)
	defer acancel()
	bctx, bcancel := chromedp.NewContext(actx)
	defer bcancel()
	// The browser first: it takes seconds to start on a busy machine,
	// and the traffic should be flowing when the page opens. chromedp
	// starts Chromium with a parent-death signal, which Linux sends when
	// the forking thread ends: the thread stays this goroutine's until
	// the test is over, so that the in-process shell's namespace work
	// (netsys.Do ends the threads it locks) cannot end it under Chromium.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := chromedp.Run(bctx); err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	t.Logf("chromium started in %v", time.Since(start).Round(time.Millisecond))
	var stderr lockedBuffer
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, []string{"shell", "--name", name, "--rate", "10mbit", "--delay", "5ms", "--web=" + addr, "--web-token", token, "--floor-probe=false",
			"--", "/bin/bash", "-c", script}, strings.NewReader(""), &bytes.Buffer{}, &stderr)
	}()
	defer func() {
		os.WriteFile(stopFile, nil, 0o644)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Error("waited 10 s for the shell to end after its command's stop file")
		}
		checkGone(t, name)
		t.Logf("whole test: %v", time.Since(start).Round(time.Millisecond))
	}()
	var shellAddr netip.Addr
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if b, err := os.ReadFile(envFile); err == nil {
			if f := strings.Fields(string(b)); len(f) == 2 && f[1] == "end" {
				shellAddr = netip.MustParseAddr(f[0])
				break
			}
		}
		select {
		case err := <-done:
			t.Fatalf("shell ended before its command started: %v\n%s", err, stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("waited 15 s for the shell's command to start:\n%s", stderr.String())
		}
	}
	// The start-up lines are written before the command starts.
	m := regexp.MustCompile(`\nlive view: http://[^ ]*:([0-9]+)/\?token=`).FindStringSubmatch(stderr.String())
	if m == nil {
		t.Fatalf("no live view's port in the start-up lines:\n%s", stderr.String())
	}
	port, _ := strconv.Atoi(m[1])
	local := fmt.Sprintf("http://127.0.0.1:%d/", port)
	url := local + "?token=" + token
	for up := time.Now(); ; time.Sleep(50 * time.Millisecond) {
		if resp, err := http.Get(url); err == nil {
			resp.Body.Close()
			break
		}
		if time.Since(up) > 10*time.Second {
			t.Fatalf("waited 10 s for the view on %s; stderr:\n%s", local, stderr.String())
		}
	}
	if want := fmt.Sprintf(":%d/?token=%s\n", port, token); !strings.Contains(stderr.String(), want) {
		t.Errorf("the start-up line does not name the view's port and token (%q):\n%s", want, stderr.String())
	}
	// Without the token, the page, its stream and its edits are refused.
	for _, r := range []struct{ method, path string }{{"GET", ""}, {"GET", "events"}, {"POST", "set"}} {
		req, _ := http.NewRequest(r.method, local+r.path, strings.NewReader(`{"rate":"1mbit"}`))
		req.Header.Set("Origin", strings.TrimSuffix(local, "/"))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s /%s without the token: status %d, want %d", r.method, r.path, resp.StatusCode, http.StatusUnauthorized)
		}
	}

	// The three flows, down into the shell, until the test ends: Prague
	// (ECT(1)) as fast as it gets, TCP (the kernel's TCP asks for no ECN
	// unless told: Not-ECT) at 2 Mbit/s, ECT(0) UDP at 1 Mbit/s.
	inShell := func(f func() error) error { return netsys.Do(name+"-shell", f) }
	any4 := netip.IPv4Unspecified()
	prTx, prRx := listenUDPIn(t, nil, any4), listenUDPIn(t, inShell, shellAddr)
	tcpLn := listenTCPIn(t, inShell, shellAddr)
	e0Tx, e0Rx := listenUDPIn(t, nil, any4), listenUDPIn(t, inShell, shellAddr)
	fctx, fcancel := context.WithCancel(ctx)
	var flows sync.WaitGroup
	defer func() {
		fcancel()
		prTx.Close()
		e0Tx.Close()
		tcpLn.Close()
		flows.Wait()
	}()
	flows.Add(5)
	go func() { defer flows.Done(); flow.PragueRecv(fctx, prRx, flow.PragueConfig{}, nil) }()
	go func() {
		defer flows.Done()
		flow.PragueSend(fctx, prTx, addrPort(prRx), flow.PragueConfig{Duration: 30 * time.Second}, nil)
	}()
	go func() {
		defer flows.Done()
		c, err := tcpLn.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		context.AfterFunc(fctx, func() { c.Close() })
		io.Copy(io.Discard, c)
	}()
	go func() {
		defer flows.Done()
		c, err := net.DialTCP("tcp", nil, tcpLn.Addr().(*net.TCPAddr))
		if err != nil {
			t.Errorf("tcp flow: %v", err)
			return
		}
		defer c.Close()
		context.AfterFunc(fctx, func() { c.Close() })
		pace(2_000_000, 1000, 30*time.Second, func(b []byte) error { _, err := c.Write(b); return err })
	}()
	go func() { defer flows.Done(); countUDP(fctx, e0Rx) }()
	if err := ecnudp.SetECN(e0Tx, aqm.ECT0); err != nil {
		t.Fatal(err)
	}
	flows.Add(1)
	go func() {
		defer flows.Done()
		to := addrPort(e0Rx)
		pace(1_000_000, 500, 30*time.Second, func(b []byte) error { _, err := e0Tx.WriteToUDPAddrPort(b, to); return err })
	}()

	if err := chromedp.Run(bctx, chromedp.Navigate(url)); err != nil {
		t.Fatal(err)
	}
	opened := time.Now()
	wait := func(what, expr string, within time.Duration) {
		t.Helper()
		for s := time.Now(); ; time.Sleep(20 * time.Millisecond) {
			var ok bool
			ectx, ecancel := context.WithTimeout(bctx, 5*time.Second)
			err := chromedp.Run(ectx, chromedp.Evaluate(expr, &ok))
			ecancel()
			if err != nil {
				t.Fatalf("%s: the page did not answer in 5 s: %v", what, err)
			}
			if ok {
				return
			}
			if time.Since(s) > within {
				var rows string
				chromedp.Run(bctx, chromedp.Evaluate(`document.getElementById("status").textContent + " " + document.getElementById("flowcount").textContent + "\n" + [...document.querySelectorAll("#flows tbody tr")].map(tr => [...tr.cells].map(c => c.textContent).join(" | ")).join("\n")`, &rows))
				var st bytes.Buffer
				Run(ctx, []string{"stats", "--name", name, "--flows"}, strings.NewReader(""), &st, &st)
				t.Fatalf("waited %v for %s (%s); the page's flow table:\n%s\nstats --flows:\n%s", within, what, expr, rows, st.String())
			}
		}
	}
	// A row of the flow table: dir, proto, source, destination, class.
	row := func(proto, class string) string {
		return fmt.Sprintf(`[...document.querySelectorAll("#flows tbody tr")].some(tr => tr.cells[0].textContent==="down" && tr.cells[1].textContent===%q && tr.cells[3].textContent.startsWith(%q) && tr.cells[4].textContent===%q)`,
			proto, shellAddr.String()+":", class)
	}
	wait("the three flows in the table with their classes",
		row("udp", "L4S")+" && "+row("tcp", "Not-ECT")+" && "+row("udp", "Classic ECN"), 2*time.Second)
	t.Logf("the three flows in the page %v after it opened", time.Since(opened).Round(time.Millisecond))
	wait("download throughput points from the last second",
		`window.pi2hop && pi2hop.lastT("down") >= Date.now()/1000-1 && pi2hop.lastTput("down") > 1e6`, 5*time.Second)

	if err := chromedp.Run(bctx, chromedp.SetValue("#rate", "5mbit", chromedp.ByID), chromedp.Click("#throttle", chromedp.ByID)); err != nil {
		t.Fatal(err)
	}
	clicked := time.Now()
	for {
		snap, err := instance.Stats(name)
		if err != nil {
			t.Fatalf("%v; the shell's log:\n%s", err, stderr.String())
		}
		if snap.Up.Bps == 5e6 && snap.Down.Bps == 5e6 {
			t.Logf("stats shows 5mbit %v after the click (down: %d packets out, %d marked, drops %v)", time.Since(clicked).Round(time.Millisecond), snap.Down.Out, snap.Down.Marked, snap.Down.QueueDrops)
			break
		}
		if time.Since(clicked) > time.Second {
			t.Fatalf("waited 1 s after Throttle for stats to show 5mbit: up %d, down %d bit/s", snap.Up.Bps, snap.Down.Bps)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Let the chart show the step down before the picture.
	wait("the chart to follow the new rate", `pi2hop.lastTput("down") < 6e6`, 3*time.Second)
	var png []byte
	if err := chromedp.Run(bctx, chromedp.FullScreenshot(&png, 100)); err != nil {
		t.Fatal(err)
	}
	dirs := []string{t.ArtifactDir()}
	if d := os.Getenv("PI2HOP_WEB_SHOTS"); d != "" {
		dirs = append(dirs, d)
	}
	for _, d := range dirs {
		p := filepath.Join(d, "web.png")
		if err := os.WriteFile(p, png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot: %s", p)
	}
}
