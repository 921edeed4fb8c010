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
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/pi2hop/pi2hop/instance"
)

// The browser view of a live shell, in headless Chromium: the page
// charts the traffic the command sends through the hop, and its
// Throttle button changes the running hop's rate, as `stats` then shows,
// within a second.
func TestShellWebInBrowser(t *testing.T) {
	needRoot(t, "bash", "chromium")
	t.Parallel() // it measures no timing of the hop
	start := time.Now()
	name := testInstance(60)
	t.Cleanup(func() { cleanupInstance(name, nil, &bytes.Buffer{}) })

	// The host takes whatever the command sends: upload traffic to chart.
	sink, err := net.Listen("tcp", ":0")
	if err != nil {
		t.Fatal(err)
	}
	defer sink.Close()
	go func() {
		for {
			c, err := sink.Accept()
			if err != nil {
				return
			}
			go func() { io.Copy(io.Discard, c); c.Close() }()
		}
	}()
	free, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := free.Addr().String()
	free.Close()

	// Bash builtins only: 64 KiB writes, 128 MiB in all (over 100 s at
	// 10 Mbit/s); the test ends the shell as soon as it has seen what it
	// needs.
	script := fmt.Sprintf(`exec 3<>/dev/tcp/$PI2HOP_HOST/%d || exit 1; for i in {1..2048}; do printf '%%65536s' >&3 || exit 1; done`,
		sink.Addr().(*net.TCPAddr).Port)
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	path, _ := exec.LookPath("chromium")
	actx, acancel := chromedp.NewExecAllocator(ctx, append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path), chromedp.NoSandbox, chromedp.WindowSize(1400, 1000))...)
	defer acancel()
	bctx, bcancel := chromedp.NewContext(actx)
	defer bcancel()
	// The browser first: it takes seconds to start on a busy machine,
	// and the shell's traffic should be flowing when the page opens.
	if err := chromedp.Run(bctx); err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	t.Logf("chromium started in %v", time.Since(start).Round(time.Millisecond))
	var stderr bytes.Buffer
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, []string{"shell", "--name", name, "--rate", "10mbit", "--delay", "5ms", "--web=" + addr, "--floor-probe=false",
			"--", "/bin/bash", "-c", script}, strings.NewReader(""), &bytes.Buffer{}, &stderr)
	}()
	defer func() {
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Error("waited 10 s for the shell to end after its context was cancelled")
		}
		checkGone(t, name)
		t.Logf("whole test: %v", time.Since(start).Round(time.Millisecond))
	}()
	url := "http://" + addr + "/"
	for up := time.Now(); ; time.Sleep(50 * time.Millisecond) {
		if resp, err := http.Get(url); err == nil {
			resp.Body.Close()
			break
		}
		select {
		case err := <-done:
			t.Fatalf("shell ended before its view answered: %v\n%s", err, stderr.String())
		default:
		}
		if time.Since(up) > 10*time.Second {
			t.Fatalf("waited 10 s for the view on %s; stderr:\n%s", addr, stderr.String())
		}
	}
	if !strings.Contains(stderr.String(), "live view: "+url+"\n") {
		t.Errorf("the start-up line does not name the view's address %s:\n%s", url, stderr.String())
	}

	if err := chromedp.Run(bctx, chromedp.Navigate(url)); err != nil {
		t.Fatal(err)
	}
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
				t.Fatalf("waited %v for %s (%s)", within, what, expr)
			}
		}
	}
	wait("upload throughput points from the last second",
		`window.pi2hop && pi2hop.lastT("up") >= Date.now()/1000-1 && pi2hop.lastTput("up") > 1e6`, 5*time.Second)

	// The command's upload is one Not-ECT TCP flow (the kernel's TCP
	// asks for no ECN unless told).
	wait("the upload's flow in the table with its class",
		`[...document.querySelectorAll("#flows tbody tr")].some(tr => tr.cells[0].textContent==="up" && tr.cells[1].textContent==="tcp" && tr.cells[4].textContent==="Not-ECT")`,
		2*time.Second)

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
			t.Logf("stats shows 5mbit %v after the click (up: %d packets out, %d marked, drops %v)", time.Since(clicked).Round(time.Millisecond), snap.Up.Out, snap.Up.Marked, snap.Up.QueueDrops)
			break
		}
		if time.Since(clicked) > time.Second {
			t.Fatalf("waited 1 s after Throttle for stats to show 5mbit: up %d, down %d bit/s", snap.Up.Bps, snap.Down.Bps)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Let the chart show the step down before the picture.
	wait("the chart to follow the new rate", `pi2hop.lastTput("up") < 6e6`, 3*time.Second)
	var png []byte
	if err := chromedp.Run(bctx, chromedp.FullScreenshot(&png, 100)); err != nil {
		t.Fatal(err)
	}
	dirs := []string{t.TempDir()}
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
