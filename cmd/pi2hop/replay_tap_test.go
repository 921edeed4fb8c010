package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
	"github.com/pi2hop/pi2hop/aqm"
)

// runCLIStderr is runCLI that also returns what the command said on stderr.
func runCLIStderr(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var o, e bytes.Buffer
	err = Run(context.Background(), args, strings.NewReader(""), &o, &e)
	return o.String(), e.String(), err
}

// TestReplayPcapOfOwnCapture: a pi2hop capture holds each packet at its
// in tap and again at its out or drop tap. Replaying it replays the in
// tap only, with a note saying so: N packets in, N packets replayed, and
// --tap X-out replays the ones the first run delivered.
func TestReplayPcapOfOwnCapture(t *testing.T) {
	dir := t.TempDir()
	const n = 300
	// 1500-byte ECT(1) packets every 600 µs (20 Mbit/s) into 10 Mbit/s:
	// the queue builds, so some are marked and the capture's out tap
	// differs from its in tap.
	var csv strings.Builder
	csv.WriteString("time_ns,bytes,ecn\n")
	for i := range n {
		fmt.Fprintf(&csv, "%d,1500,1\n", i*600_000)
	}
	trace := filepath.Join(dir, "in.csv")
	if err := os.WriteFile(trace, []byte(csv.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	capPath := filepath.Join(dir, "cap.pcapng")
	out, err := runCLI(t, "", "replay", "--trace", trace, "--rate", "10mbit", "--limit", "100", "--capture", capPath)
	if err != nil {
		t.Fatal(err)
	}
	first := parseReplay(t, out).summary
	delivered := 0
	for _, q := range first.Queues {
		delivered += int(q.Delivered)
	}
	if first.Packets != n || delivered == n || delivered == 0 {
		t.Fatalf("first run: %d packets, %d delivered: want %d, some but not all delivered", first.Packets, delivered, n)
	}

	tests := []struct {
		tap  string
		want int
		note string
	}{
		{"", n, "replaying tap replay-in only"},
		{"replay-in", n, ""},
		{"replay-out", delivered, ""},
	}
	for _, tt := range tests {
		args := []string{"replay", "--pcap", capPath, "--rate", "10mbit"}
		if tt.tap != "" {
			args = append(args, "--tap", tt.tap)
		}
		stdout, stderr, err := runCLIStderr(t, args...)
		if err != nil {
			t.Fatalf("--tap %q: %v", tt.tap, err)
		}
		if got := parseReplay(t, stdout).summary.Packets; got != tt.want {
			t.Errorf("--tap %q: %d packets replayed, want %d", tt.tap, got, tt.want)
		}
		if tt.note != "" && !strings.Contains(stderr, tt.note) {
			t.Errorf("--tap %q: stderr lacks %q: %q", tt.tap, tt.note, stderr)
		}
		if tt.note == "" && stderr != "" {
			t.Errorf("--tap %q: stderr %q, want nothing", tt.tap, stderr)
		}
	}
	_, _, err = runCLIStderr(t, "replay", "--pcap", capPath, "--tap", "up-in")
	if err == nil || !strings.Contains(err.Error(), `--tap`) || !strings.Contains(err.Error(), "replay-in, replay-out, replay-drop") {
		t.Errorf("--tap of a missing interface: %v; want the flag and the capture's interfaces", err)
	}
}

// TestReplayPcapRefusesMixedInterfaces: a capture of two interfaces of
// another tool cannot be replayed as one link's arrivals: replay refuses
// and lists them, and --tap picks one.
func TestReplayPcapRefusesMixedInterfaces(t *testing.T) {
	path := filepath.Join(t.TempDir(), "two.pcapng")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w, err := pcapgo.NewNgWriterInterface(f, pcapgo.NgInterface{Name: "eth0", LinkType: layers.LinkTypeEthernet, SnapLength: 65536},
		pcapgo.DefaultNgWriterOptions)
	if err != nil {
		t.Fatal(err)
	}
	eth1, err := w.AddInterface(pcapgo.NgInterface{Name: "eth1", LinkType: layers.LinkTypeEthernet, SnapLength: 65536})
	if err != nil {
		t.Fatal(err)
	}
	base := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	for i := range 5 { // 2 on eth0, 3 on eth1
		fr := ethFrame(t, false, aqm.ECT1, 1000, uint16(i))
		ci := gopacket.CaptureInfo{Timestamp: base.Add(time.Duration(i) * time.Millisecond), CaptureLength: len(fr), Length: len(fr)}
		if i >= 2 {
			ci.InterfaceIndex = eth1
		}
		if err := w.WritePacket(ci, fr); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	f.Close()

	_, _, err = runCLIStderr(t, "replay", "--pcap", path)
	if err == nil || !strings.Contains(err.Error(), "2 interfaces (eth0, eth1) and no pi2hop taps") || !strings.Contains(err.Error(), "--tap") {
		t.Errorf("replay of two interfaces: %v; want a refusal listing eth0, eth1 and naming --tap", err)
	}
	stdout, _, err := runCLIStderr(t, "replay", "--pcap", path, "--tap", "eth1")
	if err != nil {
		t.Fatal(err)
	}
	if got := parseReplay(t, stdout).summary.Packets; got != 3 {
		t.Errorf("--tap eth1: %d packets replayed, want 3", got)
	}
}
