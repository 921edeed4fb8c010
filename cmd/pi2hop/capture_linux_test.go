package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/hop"
	"github.com/pi2hop/pi2hop/pcap"
	"github.com/spf13/pflag"
	"golang.org/x/sys/unix"
)

// pairWithCapture starts a hop between two fresh namespaces with both
// directions captured to path. flags are link flags (--rate ...).
func pairWithCapture(t *testing.T, prefix, path string, flags ...string) (*hop.Pair, *pcap.Capture) {
	t.Helper()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	lf := addLinkFlags(fs, true)
	if err := fs.Parse(flags); err != nil {
		t.Fatal(err)
	}
	cfg, err := lf.hopConfig(prefix)
	if err != nil {
		t.Fatal(err)
	}
	capt, err := pcap.NewCapture(path, pcap.Options{TimeOffset: hop.UnixOffset(), Comment: "test " + strings.Join(flags, " ")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { capt.Close() })
	p, err := hop.NewPairWith(context.Background(), hop.PairSpec{ClientNS: prefix + "c", ServerNS: prefix + "s", Tap: newCaptureTap(capt)}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p, capt
}

// blastUDP sends 1200-byte datagrams with the given ECN codepoint from the
// client namespace to the server at about bps for d.
func blastUDP(t *testing.T, p *hop.Pair, to netip.AddrPort, ecn aqm.ECN, bps float64, d time.Duration) {
	t.Helper()
	var conn *net.UDPConn
	if err := p.InClient(func() (err error) {
		conn, err = net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(to))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	raw, _ := conn.SyscallConn()
	raw.Control(func(fd uintptr) {
		if to.Addr().Is4() {
			unix.SetsockoptInt(int(fd), unix.IPPROTO_IP, unix.IP_TOS, int(ecn))
		} else {
			unix.SetsockoptInt(int(fd), unix.IPPROTO_IPV6, unix.IPV6_TCLASS, int(ecn))
		}
	})
	payload := make([]byte, 1200)
	gap := time.Duration(float64(len(payload)+28) * 8 / bps * 1e9)
	start := time.Now()
	for i := 0; time.Since(start) < d; i++ {
		conn.Write(payload)
		if wait := time.Until(start.Add(time.Duration(i+1) * gap)); wait > 0 {
			time.Sleep(wait)
		}
	}
}

// udpSink opens a UDP socket in the server namespace that reads and
// discards until the test ends.
func udpSink(t *testing.T, p *hop.Pair, addr netip.Addr) netip.AddrPort {
	t.Helper()
	var conn *net.UDPConn
	if err := p.InServer(func() (err error) {
		conn, err = net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.AddrPortFrom(addr, 0)))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	go func() {
		buf := make([]byte, 2048)
		for {
			if _, err := conn.Read(buf); err != nil {
				return
			}
		}
	}()
	return conn.LocalAddr().(*net.UDPAddr).AddrPort()
}

// waitIdle waits until neither direction holds a packet.
func waitIdle(t *testing.T, h *hop.Hop) hop.Snapshot {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		s := h.Stats()
		if s.Up.Pending == 0 && s.Down.Pending == 0 {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("hop not idle after 5 s: pending up %d down %d", s.Up.Pending, s.Down.Pending)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestCaptureOfAHopRun: an overloaded hop with L4S and classic UDP, both
// directions captured. Analysing the capture must give exactly the hop's
// own counters, and tshark must read it without a word of complaint and
// show the annotations.
func TestCaptureOfAHopRun(t *testing.T) {
	needRoot(t)
	prefix := fmt.Sprintf("p2k%d", os.Getpid()%10000)
	path := filepath.Join(t.TempDir(), "hop.pcapng")
	p, capt := pairWithCapture(t, prefix, path, "--rate", "10mbit", "--delay", "2ms")

	sinkL := udpSink(t, p, p.ServerAddr)
	sinkC := udpSink(t, p, p.ServerAddr6)
	done := make(chan struct{})
	go func() {
		blastUDP(t, p, netip.AddrPortFrom(p.ServerAddr6, sinkC.Port()), aqm.NotECT, 10e6, 2*time.Second)
		close(done)
	}()
	blastUDP(t, p, netip.AddrPortFrom(p.ServerAddr, sinkL.Port()), aqm.ECT1, 10e6, 2*time.Second)
	<-done
	snap := waitIdle(t, p.Hop)
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if err := capt.Close(); err != nil {
		t.Fatal(err)
	}

	res, err := pcap.Analyze([]pcap.Input{{Path: path}}, pcap.AnalyzeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, ifc := range res.Interfaces {
		if ifc.CaptureDropped != 0 {
			t.Fatalf("capture dropped %d records at %s: exact comparison impossible", ifc.CaptureDropped, ifc.Name)
		}
	}
	byName := map[string]*pcap.DirectionResult{}
	for _, d := range res.Directions {
		byName[d.Name] = d
	}
	up := snap.Up
	if up.Queue.L.Marked == 0 || up.Queue.C.Dropped == 0 {
		t.Fatalf("hop marked %d L4S and dropped %d classic packets: the overload did not happen", up.Queue.L.Marked, up.Queue.C.Dropped)
	}
	for _, ds := range []*hop.DirStats{&snap.Up, &snap.Down} {
		if ds.In == 0 {
			continue
		}
		d := byName[ds.Dir.String()]
		if d == nil {
			t.Fatalf("no %s direction in the capture", ds.Dir)
		}
		var in uint64
		for _, c := range d.Classes {
			hc := ds.Queue.C
			if c.Class == "L" {
				hc = ds.Queue.L
			}
			in += c.In
			t.Logf("%s %s: in %d sent %d marked %d dropped %d (hop: sent %d marked %d dropped %d)",
				ds.Dir, c.Class, c.In, c.Sent, c.Marked, c.Dropped, hc.Sent, hc.Marked, hc.Dropped)
			if c.Sent != hc.Sent || c.Marked != hc.Marked || c.Dropped != hc.Dropped {
				t.Errorf("%s %s: capture sent/marked/dropped %d/%d/%d, hop %d/%d/%d",
					ds.Dir, c.Class, c.Sent, c.Marked, c.Dropped, hc.Sent, hc.Marked, hc.Dropped)
			}
		}
		if in != ds.In {
			t.Errorf("%s: capture saw %d packets in, hop read %d", ds.Dir, in, ds.In)
		}
	}

	tsharkReads(t, path, "pi2hop: queue=L", "verdict=marked", "queue=C")
}

// tsharkReads checks that tshark opens path without warnings and shows
// the AQM annotations as packet comments, each of want among them.
func tsharkReads(t *testing.T, path string, want ...string) {
	t.Helper()
	if _, err := exec.LookPath("tshark"); err != nil {
		t.Log("tshark not installed: skipping the Wireshark check (.ci/run installs it)")
		return
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.Command("tshark", "-n", "-r", path, "-T", "fields", "-e", "frame.comment")
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("tshark: %v\n%s", err, stderr.String())
	}
	for _, line := range strings.Split(strings.TrimSpace(stderr.String()), "\n") {
		if line != "" && !strings.Contains(line, "Running as user \"root\"") {
			t.Errorf("tshark warns: %s", line)
		}
	}
	for _, w := range want {
		if !strings.Contains(stdout.String(), w) {
			t.Errorf("tshark shows no annotation with %q; first lines:\n%.500s", w, stdout.String())
		}
	}
}

// TestCaptureCompleteAfterSIGTERM runs `pi2hop shell --capture` as a
// process, stops it with SIGTERM while packets flow, and checks that the
// file reads to the end.
func TestCaptureCompleteAfterSIGTERM(t *testing.T) {
	needRoot(t)
	bin := filepath.Join(t.TempDir(), "pi2hop")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	name := testInstance(7)
	t.Cleanup(func() { cleanupInstance(name, &bytes.Buffer{}) })
	path := filepath.Join(t.TempDir(), "term.pcapng")
	cmd := exec.Command(bin, "shell", "--name", name, "--rate", "5mbit", "--capture", path, "--",
		"/bin/sh", "-c", "exec ping -q -i 0.01 -s 1000 $PI2HOP_HOST")
	cmd.Dir = t.TempDir()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond)
	cmd.Process.Signal(syscall.SIGTERM)
	errc := make(chan error, 1)
	go func() { errc <- cmd.Wait() }()
	select {
	case <-errc:
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("pi2hop shell did not exit 10 s after SIGTERM; stderr:\n%s", stderr.String())
	}
	r, err := pcap.Open(path)
	if err != nil {
		t.Fatalf("capture after SIGTERM: %v\nstderr:\n%s", err, stderr.String())
	}
	defer r.Close()
	n := 0
	for {
		_, err := r.Next()
		if err != nil {
			if !errors.Is(err, io.EOF) {
				t.Fatalf("capture after SIGTERM breaks off after %d packets: %v", n, err)
			}
			break
		}
		n++
	}
	if n < 50 {
		t.Errorf("capture after SIGTERM holds %d packets, want the ~150 pings' worth", n)
	}
	tsharkReads(t, path, "pi2hop: queue=C", "verdict=sent")
	checkGone(t, name)
}
