package main

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/pi2hop/pi2hop/hop"
)

// TestStatsLiveSelfConsistent: on a live shell with traffic, stats --json
// shows no percentile above the measured worst; after set --target 7ms
// the configuration block says target 7ms; and stats with no --name finds
// an instance running under another name: it is the only one, or the
// error lists it among those running (other tests' instances may run
// beside it).
func TestStatsLiveSelfConsistent(t *testing.T) {
	needRoot(t, "ping")
	t.Parallel() // checks no timing: runs beside the others that check none
	bin := buildPi2hop(t)
	name := testInstance(70)
	t.Cleanup(func() { exec.Command(bin, "shell", "--cleanup", "--name", name).Run() })
	p := startIn(t, "", bin, "shell", "--name", name, "--rate", "2mbit", "--delay", "2ms", "--",
		"/bin/sh", "-c", "ping -q -l 8 -i 0.002 -s 1200 -c 400 $PI2HOP_HOST; sleep 60")
	start := time.Now()
	p.waitRunning("shell", nil)
	t.Logf("shell running after %v", time.Since(start).Round(time.Millisecond))

	type row struct {
		Dir      string          `json:"dir"`
		In       uint64          `json:"in_packets"`
		SojournC hop.MsQuantiles `json:"sojourn_c"`
		SojournL hop.MsQuantiles `json:"sojourn_l"`
		Lateness hop.UsQuantiles `json:"lateness"`
		Config   hop.ConfigRow   `json:"config"`
	}
	stats := func(args ...string) (rows []row, out string, err error) {
		b, err := exec.Command(bin, append([]string{"stats", "--json"}, args...)...).CombinedOutput()
		if err != nil {
			return nil, string(b), err
		}
		var s struct {
			Dirs []row `json:"directions"`
		}
		if err := json.Unmarshal(b, &s); err != nil || len(s.Dirs) != 2 {
			t.Fatalf("stats --json: %v\n%s", err, b)
		}
		return s.Dirs, string(b), nil
	}
	// 1200-byte pings, the first 8 at once (-l 8), then every 2 ms, 4.9
	// Mbit/s into 2: the up queue builds (sojourns above 0) at the start,
	// also when a busy machine delays ping's later sends past the link's
	// 4.9 ms a packet, which would leave it never queueing.
	deadline := time.Now().Add(5 * time.Second)
	var rows []row
	for {
		var out string
		var err error
		if rows, out, err = stats("--name", name); err != nil {
			t.Fatalf("stats: %v\n%s", err, out)
		}
		if rows[0].In >= 100 && rows[1].In >= 100 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("fewer than 100 packets each way within 5 s of the start:\n%s\n%s", out, p.log())
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, r := range rows {
		for _, q := range []struct {
			what          string
			p50, p99, max float64
		}{{"sojourn C", r.SojournC.P50, r.SojournC.P99, r.SojournC.Max}, {"sojourn L", r.SojournL.P50, r.SojournL.P99, r.SojournL.Max},
			{"lateness", r.Lateness.P50, r.Lateness.P99, r.Lateness.Max}} {
			if q.p50 > q.p99 || q.p99 > q.max {
				t.Errorf("%s %s: p50 %g p99 %g max %g: a percentile above the worst", r.Dir, q.what, q.p50, q.p99, q.max)
			}
		}
		// Up, 4.9 Mbit/s of requests into 2 build a queue. The replies
		// reach the down link paced by the up one's 2 Mbit/s, each
		// arriving as the one before it leaves: their sojourn is 0 unless
		// the machine bunches them, so down is not held to it.
		if r.Dir == "up" && r.SojournC.Max == 0 && r.SojournL.Max == 0 {
			t.Errorf("%s: no sojourn measured after %d packets", r.Dir, r.In)
		}
		if !strings.Contains(r.Config.TC, " target 15ms ") || r.Config.RateBps != 2_000_000 {
			t.Errorf("%s: configuration before set: %s, %s", r.Dir, r.Config.TC, r.Config.Link)
		}
	}

	if out, err := exec.Command(bin, "set", "--name", name, "--target", "7ms").CombinedOutput(); err != nil {
		t.Fatalf("set --target 7ms: %v\n%s", err, out)
	}
	rows, out, err := stats("--name", name)
	if err != nil {
		t.Fatalf("stats after set: %v\n%s", err, out)
	}
	for _, r := range rows {
		if !strings.Contains(r.Config.TC, " target 7ms ") || r.Config.Params["target"] != "7ms" {
			t.Errorf("%s after set --target 7ms: %s (params %v)", r.Dir, r.Config.TC, r.Config.Params)
		}
	}
	if text, err := exec.Command(bin, "stats", "--name", name).CombinedOutput(); err != nil || !strings.Contains(string(text), " target 7ms ") {
		t.Errorf("stats text after set: %v\n%s", err, text)
	}

	// No --name: this instance is not the default one.
	text, err := exec.Command(bin, "stats").CombinedOutput()
	switch {
	case err == nil && !strings.Contains(string(text), "instance "+name+" "):
		t.Errorf("stats with no --name answered for another instance:\n%s", text)
	case err != nil && !strings.Contains(string(text), name):
		t.Errorf("stats with no --name: %v; the error does not list %s:\n%s", err, name, text)
	}
	t.Logf("stats with no --name: %v\n%s", err, text)
	t.Logf("checks done after %v", time.Since(start).Round(time.Millisecond))
	p.endBy("shell", "SIGTERM")
	t.Logf("shell ended after %v", time.Since(start).Round(time.Millisecond))
}
