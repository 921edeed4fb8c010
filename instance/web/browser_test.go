//go:build linux && !race

// Browser tests need Debian's chromium (Linux). They are root or long
// tests, which the -short race step skips anyway: left out of the race
// build, it need not compile the DevTools protocol packages.

package web

import (
	"context"

	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/pi2hop/pi2hop/instance"
	"github.com/pi2hop/pi2hop/internal/roottest"
)

// browser starts headless Chromium for t: skipped with -short, and where
// chromium is missing outside CI (make test as root installs it).
func browser(t *testing.T) context.Context {
	t.Helper()
	if testing.Short() {
		t.Skip("drives a browser: skipped with -short")
	}
	path, err := exec.LookPath("chromium")
	if err != nil {
		if roottest.InCI() {
			t.Fatalf("needs chromium, which scripts/test-deps installs: %v", err)
		}
		t.Skipf("needs chromium (scripts/test-deps installs it as root): %v", err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path), chromedp.NoSandbox, chromedp.WindowSize(1400, 1000),
		chromedp.Flag("disable-gpu", true))
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancel)
	ctx, cancel2 := chromedp.NewContext(actx)
	t.Cleanup(cancel2)
	ctx, cancel3 := context.WithTimeout(ctx, 30*time.Second)
	t.Cleanup(cancel3)
	if err := chromedp.Run(ctx); err != nil { // starts the browser
		t.Fatalf("starting chromium: %v", err)
	}
	return ctx
}

// waitJS evaluates expr until it is true or within expires, and says what
// it waited for when it never is.
func waitJS(t *testing.T, bctx context.Context, what, expr string, within time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		var ok bool
		ctx, cancel := context.WithTimeout(bctx, 5*time.Second)
		err := chromedp.Run(ctx, chromedp.Evaluate(expr, &ok))
		cancel()
		if err != nil {
			t.Fatalf("%s: the page did not answer in 5 s: %v", what, err)
		}
		if ok {
			return time.Since(start)
		}
		if time.Since(start) > within {
			t.Fatalf("waited %v for %s (%s)", within, what, expr)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// The page in a real browser: the flows with their classes, live
// throughput points, the throttle button reaching the source's rate, a
// table of 4096 flows that stays quick to sort, a screenshot, and the
// refusal a view beyond loopback gives a browser without the token.
func TestBrowserView(t *testing.T) {
	t.Parallel()
	start := time.Now()
	defer func() { t.Logf("whole test, browser start included: %v", time.Since(start).Round(time.Millisecond)) }()
	ctx := browser(t)
	src := newFake(10e6, threeFlows())
	s, err := Serve(Options{Addr: "127.0.0.1:0"}, src)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })

	if err := chromedp.Run(ctx, chromedp.Navigate(s.URL())); err != nil {
		t.Fatal(err)
	}
	took := waitJS(t, ctx, "the three flows with their classes",
		`(function(){var c=[...document.querySelectorAll("#flows tbody tr td:nth-child(5)")].map(e=>e.textContent).sort().join(",");
		 return c==="Classic ECN,L4S,Not-ECT";})()`, 2*time.Second)
	t.Logf("flows shown %v after loading", took.Round(time.Millisecond))
	waitJS(t, ctx, "the flows' RTT column: the L4S flow's, and - for the others",
		`[...document.querySelectorAll("#flows tbody tr td:nth-child(12)")].map(e=>e.textContent).sort().join(",")==="-,-,20.4/23.1ms"`, time.Second)
	waitJS(t, ctx, "throughput points from the last second in both directions",
		`window.pi2hop && pi2hop.points("up")>1 && pi2hop.lastT("up") >= Date.now()/1000-1 && pi2hop.lastT("down") >= Date.now()/1000-1`,
		2*time.Second)

	waitJS(t, ctx, "the classic drops in the marks and drops chart's legend",
		`document.querySelector(".chart-marks .u-legend").textContent.includes("drop classic")`, 2*time.Second)

	// Throttle: the rate field and the button, then the source's rate.
	if err := chromedp.Run(ctx, chromedp.SetValue("#rate", "5mbit", chromedp.ByID), chromedp.Click("#throttle", chromedp.ByID)); err != nil {
		t.Fatal(err)
	}
	clicked := time.Now()
	for src.rate() != 5e6 {
		if time.Since(clicked) > time.Second {
			t.Fatalf("waited 1 s after Throttle for the rate to become 5mbit: still %d bit/s", src.rate())
		}
		time.Sleep(10 * time.Millisecond)
	}
	waitJS(t, ctx, "the page to show 5mbit", `document.querySelector(".dirinfo").textContent.includes("5mbit")`, 2*time.Second)
	if err := chromedp.Run(ctx, chromedp.Click("#unthrottle", chromedp.ByID)); err != nil {
		t.Fatal(err)
	}
	for clicked = time.Now(); src.rate() != 0; {
		if time.Since(clicked) > time.Second {
			t.Fatalf("waited 1 s after Unthrottle for the rate to become unlimited: still %d bit/s", src.rate())
		}
		time.Sleep(10 * time.Millisecond)
	}
	src.Set(mustRate(t, "10mbit")) // back to a rate for the screenshot's link-rate line
	time.Sleep(1200 * time.Millisecond)
	shot(t, ctx, "web-synthetic.png")

	// 4096 flows: the table shows the top rows and sorts them quickly.
	src.setFlows(manyFlows(4096))
	waitJS(t, ctx, "the 4096-flow table", `document.getElementById("flowcount").textContent.includes("of 4096")`, 3*time.Second)
	var ms float64
	if err := chromedp.Run(ctx, chromedp.Evaluate(`(function(){var th=document.querySelector('#flows th[data-k="src"]');
		var t0=performance.now(); th.click(); th.click(); return performance.now()-t0;})()`, &ms)); err != nil {
		t.Fatal(err)
	}
	var rows int
	chromedp.Run(ctx, chromedp.Evaluate(`document.querySelectorAll("#flows tbody tr").length`, &rows))
	t.Logf("two sorts of 4096 flows: %.1f ms; %d rows rendered", ms, rows)
	if rows != 100 {
		t.Errorf("%d rows rendered for 4096 flows, want the top 100", rows)
	}
	if ms > 500 {
		t.Errorf("two sorts of 4096 flows took %.0f ms: the page is not responsive", ms)
	}
	waitJS(t, ctx, "samples still arriving with 4096 flows", `pi2hop.lastT("up") >= Date.now()/1000-1`, 2*time.Second)

	// A view on a non-loopback address, opened without its token,
	// shows the refusal and not the page.
	s2, err := Serve(Options{Addr: "0.0.0.0:0"}, src)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s2.Close() })
	port := s2.ln.Addr().String()[strings.LastIndex(s2.ln.Addr().String(), ":")+1:]
	var body string
	if err := chromedp.Run(ctx, chromedp.Navigate("http://127.0.0.1:"+port+"/"),
		chromedp.Text("body", &body, chromedp.ByQuery)); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(body, "token missing or wrong") || strings.Contains(body, "Flows") {
		t.Errorf("the page without its token shows %q, want the refusal", body)
	}
}

func mustRate(t *testing.T, r string) instance.Settings {
	t.Helper()
	s, err := Edit{"rate": r}.Settings()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// shot writes a screenshot of the page to the test's directory, and to
// $PI2HOP_WEB_SHOTS/name when that is set (the live shell test in
// cmd/pi2hop writes docs/web.png so).
func shot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	var png []byte
	if err := chromedp.Run(ctx, chromedp.FullScreenshot(&png, 100)); err != nil {
		t.Fatal(err)
	}
	dirs := []string{t.TempDir()}
	if d := os.Getenv("PI2HOP_WEB_SHOTS"); d != "" {
		dirs = append(dirs, d)
	}
	for _, d := range dirs {
		p := filepath.Join(d, name)
		if err := os.WriteFile(p, png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot: %s (%d bytes)", p, len(png))
	}

}
