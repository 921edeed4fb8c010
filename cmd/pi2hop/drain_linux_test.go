package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pi2hop/pi2hop/pcap"
)

// TestShellDrainsAtExit: a command that sends a burst and exits at once
// leaves the burst in the hop's queue and delay line (200 datagrams of
// 1000 B at 5 Mbit/s are 0.33 s of queue, plus 50 ms of delay). The hop
// delivers all of it before it removes its devices: the host receives
// every datagram, and analyze of the capture matches every ingress packet
// (no "unseen" drop) with the hop dropping nothing (a FIFO with room for
// the burst).
func TestShellDrainsAtExit(t *testing.T) {
	needRoot(t, "bash") // for /dev/udp
	name := testInstance(9)
	t.Cleanup(func() { cleanupInstance(name, nil, &bytes.Buffer{}) })
	const burst = 200
	ln, err := net.ListenUDP("udp", &net.UDPAddr{})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var got atomic.Int64
	go func() {
		buf := make([]byte, 2048)
		for {
			if _, err := ln.Read(buf); err != nil {
				return
			}
			got.Add(1)
		}
	}()
	port := ln.LocalAddr().(*net.UDPAddr).Port
	script := fmt.Sprintf(`for i in $(seq %d); do printf '%%1000s' x >/dev/udp/$PI2HOP_HOST/%d || exit 1; done`, burst, port)
	capFile := filepath.Join(t.TempDir(), "drain.pcapng")
	var stdout, stderr bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err = Run(ctx, []string{"shell", "--name", name, "--rate", "5mbit", "--delay", "50ms", "--aqm", "fifo",
		"--capture", capFile, "--", "/bin/bash", "-c", script}, strings.NewReader(""), &stdout, &stderr)
	if err != nil {
		t.Fatalf("shell: %v; stderr:\n%s", err, stderr.String())
	}
	// Delivered before the devices went: only the host's own receive path
	// is left, so a short deadline is enough.
	deadline := time.Now().Add(2 * time.Second)
	for got.Load() < burst && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := got.Load(); n != burst {
		t.Errorf("the host received %d of the %d datagrams the command sent (waited 2 s after shell returned)", n, burst)
	}
	res, err := pcap.Analyze([]pcap.Input{{Path: capFile}}, pcap.AnalyzeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	up := res.Direction("up")
	if up == nil {
		t.Fatalf("no up direction in the capture: %+v", res.Directions)
	}
	var in, sent, dropped, unseen uint64
	for _, c := range up.Classes {
		in, sent, dropped, unseen = in+c.In, sent+c.Sent, dropped+c.Dropped, unseen+c.DropsBy["unseen"]
	}
	if in < burst || sent != in || dropped != 0 || unseen != 0 {
		t.Errorf("analyze, up: in %d, sent %d, dropped %d (unseen %d); want in >= %d, all sent, 0 dropped",
			in, sent, dropped, unseen, burst)
	}
	checkGone(t, name)
}
