package testbed

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pi2hop/pi2hop/invoker"
)

func TestMetricLines(t *testing.T) {
	in := strings.Join([]string{
		`{"metric": "frame_ms", "value": 10, "unit": "ms"}`,
		`not json at all`,
		`{"metric":"frame_ms","value":30,"unit":"ms","extra":[1,2]}`,
		`{"metric":"load_s","value":1.5}`,
		`{"metric":"","value":3}`,            // no name
		`{"metric":"frame_ms"}`,              // no value
		`{"value":3}`,                        // no metric
		`{"metric":"frame_ms","value":"20"}`, // a string is no value
		`{"metric":"frame_ms","value":20,"unit":"ms"}` + "\r",
		`  {"metric":"x","value":1}`, // only lines that start with {
		strings.Repeat("x", 3*maxLineBytes),
		`{"metric":"frame_ms","value":40,"unit":"ms"}`,
	}, "\n")
	m := newMetricLines()
	m.read(strings.NewReader(in))
	got := m.summaries("client")
	if len(got) != 2 {
		t.Fatalf("metrics %+v, want frame_ms and load_s", got)
	}
	f, l := got[0], got[1]
	// frame_ms: 10, 30, 20, 40: nearest rank p50 = 20, p99 = 40, mean 25.
	if f.Name != "frame_ms" || f.Unit != "ms" || f.From != "client" || f.Summary.N != 4 ||
		f.Summary.P50 != 20 || f.Summary.P99 != 40 || f.Summary.Mean != 25 {
		t.Errorf("frame_ms: %+v", f)
	}
	if l.Name != "load_s" || l.Unit != "" || l.Summary.N != 1 || l.Summary.Mean != 1.5 {
		t.Errorf("load_s: %+v", l)
	}
}

func TestMetricLinesBounded(t *testing.T) {
	m := newMetricLines()
	for i := range maxMetrics + 10 {
		m.add(strings.Repeat("m", 1+i%3)+string(rune('a'+i%26))+string(rune('a'+i/26)), "", 1)
	}
	if len(m.order) != maxMetrics || m.dropped != 10 {
		t.Errorf("%d metrics kept, %d dropped; want %d and 10", len(m.order), m.dropped, maxMetrics)
	}
	m = newMetricLines()
	for range maxValues + 5 {
		m.add("x", "", 1)
	}
	if m.kept != maxValues || m.dropped != 5 {
		t.Errorf("%d values kept, %d dropped; want %d and 5", m.kept, m.dropped, maxValues)
	}
}

func TestTailLines(t *testing.T) {
	tl := newTailLines(3)
	tl.read(strings.NewReader("a\nb\nc\nd\ne")) // the last line has no newline
	if got := strings.Join(tl.lines(), ","); got != "c,d,e" {
		t.Errorf("tail %q, want c,d,e", got)
	}
}

func TestCheckAppCommand(t *testing.T) {
	dir := t.TempDir()
	notExec := filepath.Join(dir, "app")
	if err := os.WriteFile(notExec, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ownerOnly := filepath.Join(dir, "mine")
	if err := os.WriteFile(ownerOnly, []byte("#!/bin/sh\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	other := invoker.User{UID: 64123, GID: 64123, Name: "someone", Home: dir, Shell: "/bin/sh"}
	tests := []struct {
		line string
		u    *invoker.User
		want string // "" = accepted
	}{
		{"sh -c true", nil, ""},
		{"FOO=1 BAR=2 sh -c true", nil, ""},
		{"exec sh", nil, ""},
		{"no-such-program-p2h --flag", nil, "no-such-program-p2h: not found in PATH"},
		{"exec no-such-program-p2h", nil, "no-such-program-p2h: not found"},
		{"FOO=1 no-such-program-p2h", nil, "no-such-program-p2h: not found"},
		{notExec + " -x", nil, "permission denied"},
		{ownerOnly, &other, "someone may not run it"},
		// Left to the shell: expansions, quotes, keywords, builtins.
		{"$APP --flag", nil, ""},
		{"'my app'", nil, ""},
		{"for i in 1 2; do true; done", nil, ""},
		{"cd /tmp && ./x", nil, ""},
		{"   ", nil, "empty command"},
	}
	for _, tt := range tests {
		err := CheckAppCommand(tt.line, tt.u)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%q: %v, want accepted", tt.line, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%q: %v, want an error with %q", tt.line, err, tt.want)
		}
	}
}

// TestAppCommandEnds runs commands in this namespace: their exit, their
// stderr's last lines, their metrics, and the lab's stop of one that
// runs on, with its children.
func TestAppCommandEnds(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: commands start through netsys.Do, which enters the namespace")
	}
	c, err := startAppCommand("", "client", `echo '{"metric":"m","value":2}'; echo oops >&2; exit 3`, nil, []string{"PI2HOP_VARIANT=x"})
	if err != nil {
		t.Fatal(err)
	}
	waitDone(t, c, 5*time.Second)
	exit, ms := c.result()
	if exit.Code != 3 || !exit.Failed || exit.Stopped || strings.Join(exit.StderrTail, "|") != "oops" || len(ms) != 1 || ms[0].Summary.Mean != 2 {
		t.Errorf("exit %+v, metrics %+v; want code 3, failed, stderr oops, m = 2", exit, ms)
	}
	c, err = startAppCommand("", "server", `test "$PI2HOP_VARIANT" = x || exit 9; sleep 30 & sleep 30; wait`, nil, []string{"PI2HOP_VARIANT=x"})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	start := time.Now()
	c.stop(2 * time.Second)
	exit, _ = c.result()
	// SIGTERM reaches the whole group: sh and both sleeps end at once.
	if !exit.Stopped || exit.Failed || exit.Code != 128+15 || time.Since(start) > time.Second {
		t.Errorf("stopped: %+v after %v; want stopped by SIGTERM (143) within 1 s", exit, time.Since(start))
	}
}

func waitDone(t *testing.T, c *appCommand, d time.Duration) {
	t.Helper()
	select {
	case <-c.done:
	case <-time.After(d):
		c.stop(time.Second)
		t.Fatalf("%s %q still ran after %v", c.role, c.line, d)
	}
}
