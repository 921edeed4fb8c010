package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pi2hop/pi2hop/analyze"
)

// TestReplayCaptureAgreesWithSummary replays an overloaded mixed trace with
// --capture and checks that analysing the capture gives exactly the
// replay's own per-queue counts, and that every decision is annotated.
func TestReplayCaptureAgreesWithSummary(t *testing.T) {
	dir := t.TempDir()
	var trace strings.Builder
	trace.WriteString("time_ns,bytes,ecn,flow\n")
	for i := range 600 {
		// 1500 B every 0.6 ms = 20 Mbit/s into a 10 Mbit/s link.
		fmt.Fprintf(&trace, "%d,1500,%d,%d\n", i*600_000, []int{0, 1, 2}[i%3], i%3)
	}
	tracePath := filepath.Join(dir, "t.csv")
	if err := os.WriteFile(tracePath, []byte(trace.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	capPath := filepath.Join(dir, "r.pcapng")
	var out, errb bytes.Buffer
	err := Run(context.Background(), []string{"replay", "--trace", tracePath, "--rate", "10mbit", "--capture", capPath}, nil, &out, &errb)
	if err != nil {
		t.Fatalf("replay: %v\n%s", err, errb.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	var sum struct {
		Queues map[string]struct {
			Arrivals, Delivered, Marked, Dropped uint64
		}
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &sum); err != nil {
		t.Fatalf("summary: %v", err)
	}

	res, err := analyze.Analyze([]analyze.Input{{Path: capPath}}, analyze.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Directions) != 1 {
		t.Fatalf("directions = %d, want 1 (replay)", len(res.Directions))
	}
	var marks, drops uint64
	for _, c := range res.Directions[0].Classes {
		want := sum.Queues[c.Class]
		if c.In != want.Arrivals || c.Sent != want.Delivered || c.Marked != want.Marked || c.Dropped != want.Dropped {
			t.Errorf("queue %s: capture in/sent/marked/dropped = %d/%d/%d/%d, replay says %d/%d/%d/%d",
				c.Class, c.In, c.Sent, c.Marked, c.Dropped, want.Arrivals, want.Delivered, want.Marked, want.Dropped)
		}
		if c.Annotated != c.Sent+c.Dropped {
			t.Errorf("queue %s: %d of %d decisions annotated", c.Class, c.Annotated, c.Sent+c.Dropped)
		}
		marks += c.Marked
		drops += c.Dropped
	}
	if marks == 0 || drops == 0 {
		t.Errorf("overloaded trace gave %d marks and %d drops: the test checks nothing", marks, drops)
	}
}
