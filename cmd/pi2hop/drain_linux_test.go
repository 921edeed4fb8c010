package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pi2hop/pi2hop/analyze"
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
	name := testInstance(12)
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
	res, err := analyze.Analyze([]analyze.Input{{Path: capFile}}, analyze.Options{})
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

// TestShellIperf3LeavesNothingUnseen: after `shell -- iperf3 ...` exits,
// analyze of its capture matches every packet the hop read with its
// fate: with a queue that never overflows (FIFO, 10 000 packets) the hop
// drops nothing, so no drop may show, "unseen" ones (an ingress packet
// with no egress or drop record: what the capture lost when the hop
// stopped with packets in flight) included. The TCP flow's last packets,
// FIN and ACK, are the ones a hop that stopped at once would lose.
func TestShellIperf3LeavesNothingUnseen(t *testing.T) {
	needRoot(t, "iperf3")
	name := testInstance(10)
	t.Cleanup(func() { cleanupInstance(name, nil, &bytes.Buffer{}) })
	ln, err := net.Listen("tcp", ":0") // a free port for the server
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	server := exec.CommandContext(ctx, "iperf3", "-s", "-1", "-p", fmt.Sprint(port))
	var serverOut bytes.Buffer
	server.Stdout, server.Stderr = &serverOut, &serverOut
	if err := server.Start(); err != nil {
		t.Fatal(err)
	}
	defer server.Process.Kill()
	// The client tries once, so it starts only when the server listens.
	if err := waitListening(port, 10*time.Second); err != nil {
		server.Process.Kill()
		server.Wait() // its output copied in full before it is read
		t.Fatalf("iperf3 -s: %v; its output:\n%s", err, serverOut.String())
	}
	capFile := filepath.Join(t.TempDir(), "iperf3.pcapng")
	var stdout, stderr bytes.Buffer
	err = Run(ctx, []string{"shell", "--name", name, "--rate", "20mbit", "--delay", "10ms", "--aqm", "fifo", "--limit", "10000",
		"--capture", capFile, "--", "/bin/sh", "-c", fmt.Sprintf("iperf3 -c $PI2HOP_HOST -p %d -t 3", port)}, strings.NewReader(""), &stdout, &stderr)
	if err != nil {
		t.Fatalf("shell: %v; stdout:\n%s\nstderr:\n%s\nserver:\n%s", err, stdout.String(), stderr.String(), serverOut.String())
	}
	res, err := analyze.Analyze([]analyze.Input{{Path: capFile}}, analyze.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{"up", "down"} {
		d := res.Direction(dir)
		if d == nil {
			t.Fatalf("no %s direction in the capture: %+v", dir, res.Directions)
		}
		var in, sent, dropped, unseen uint64
		for _, c := range d.Classes {
			in, sent, dropped, unseen = in+c.In, sent+c.Sent, dropped+c.Dropped, unseen+c.DropsBy["unseen"]
		}
		t.Logf("%s: in %d, sent %d, dropped %d (unseen %d)", dir, in, sent, dropped, unseen)
		if in < 100 || sent != in || dropped != 0 || unseen != 0 {
			t.Errorf("analyze, %s: in %d, sent %d, dropped %d (unseen %d); want in >= 100, all sent, 0 dropped, 0 unseen",
				dir, in, sent, dropped, unseen)
		}
	}
	checkGone(t, name)
}

// waitListening waits until a TCP socket of this namespace listens on
// port (state 0A in /proc/net/tcp or tcp6), for at most d.
func waitListening(port int, d time.Duration) error {
	want := fmt.Sprintf(":%04X", port)
	for deadline := time.Now().Add(d); ; time.Sleep(10 * time.Millisecond) {
		for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
			b, err := os.ReadFile(f)
			if err != nil {
				continue
			}
			for _, line := range strings.Split(string(b), "\n")[1:] {
				if fs := strings.Fields(line); len(fs) > 3 && strings.HasSuffix(fs[1], want) && fs[3] == "0A" {
					return nil
				}
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("nothing listened on TCP port %d within %v", port, d)
		}
	}
}
