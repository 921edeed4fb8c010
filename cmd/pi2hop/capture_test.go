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

	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/pcap"
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

	res, err := pcap.Analyze([]pcap.Input{{Path: capPath}}, pcap.AnalyzeOptions{})
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

func TestSynthHeaderIsValidIPv4(t *testing.T) {
	var b [28]byte
	for _, ecn := range []aqm.ECN{aqm.NotECT, aqm.ECT1, aqm.ECT0, aqm.CE} {
		h := synthHeader(b[:], 1500, ecn, 7)
		// Only the headers are there, so aqm.View (which wants the whole
		// packet) would call it truncated: read the fields directly.
		if h[0] != 0x45 || aqm.ECN(h[1]&3) != ecn || int(h[2])<<8|int(h[3]) != 1500 || h[9] != 17 {
			t.Errorf("ecn %v: header % x", ecn, h)
		}
		var sum uint32
		for i := 0; i < 20; i += 2 {
			sum += uint32(h[i])<<8 | uint32(h[i+1])
		}
		for sum > 0xffff {
			sum = sum&0xffff + sum>>16
		}
		if sum != 0xffff {
			t.Errorf("ecn %v: header checksum does not verify (sum %#x)", ecn, sum)
		}
	}
}
