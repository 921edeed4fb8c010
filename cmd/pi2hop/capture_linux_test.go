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

	"github.com/pi2hop/pi2hop/analyze"
	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/flow"
	"github.com/pi2hop/pi2hop/hop"
	"github.com/pi2hop/pi2hop/internal/roottest"
	"github.com/pi2hop/pi2hop/pcap"
	"github.com/pi2hop/pi2hop/topology"
	"github.com/spf13/pflag"
	"golang.org/x/sys/unix"
)

// pairWithCapture starts a hop between two fresh namespaces with both
// directions captured to path. flags are link flags (--rate ...).
func pairWithCapture(t *testing.T, prefix, path string, flags ...string) (*topology.Pair, *pcap.Capture) {
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
	p, err := topology.NewPairWith(context.Background(), topology.PairSpec{ClientNS: prefix + "c", ServerNS: prefix + "s", Tap: pcap.NewHopTap(capt, "")}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p, capt
}

// blastUDP sends 1200-byte datagrams with the given ECN codepoint from the
// client namespace to the server at about bps for d.
func blastUDP(t *testing.T, p *topology.Pair, to netip.AddrPort, ecn aqm.ECN, bps float64, d time.Duration) {
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
	paceUDP(conn, bps, d)
}

// paceUDP writes 1200-byte datagrams on conn at about bps (IP rate) for d.
// A sender that fell behind (descheduled, or its sleep overslept) does not
// catch up with a burst: it starts a new schedule from now. Catching up
// after a 30 ms stall would send 30 ms worth of packets at once, a
// burst at line rate that builds a queue the hop rightly drops from; the
// load must stay what the test says it is in every window.
func paceUDP(conn *net.UDPConn, bps float64, d time.Duration) {
	payload := make([]byte, 1200)
	gap := time.Duration(float64(len(payload)+28) * 8 / bps * 1e9)
	start := time.Now()
	end := start.Add(d)
	next := start
	for now := start; now.Before(end); now = time.Now() {
		conn.Write(payload)
		next = next.Add(gap)
		if now.Sub(next) > time.Millisecond {
			next = now // behind by more than a millisecond: drop the deficit
		}
		if wait := next.Sub(now); wait > 0 {
			time.Sleep(wait)
		}
	}
}

// udpSink opens a UDP socket on addr that reads and discards until the
// test ends; in runs a function in the namespace (Pair.InServer or
// Pair.InClient).
func udpSink(t *testing.T, in func(func() error) error, addr netip.Addr) netip.AddrPort {
	t.Helper()
	var conn *net.UDPConn
	if err := in(func() (err error) {
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

	sinkL := udpSink(t, p.InServer, p.ServerAddr)
	sinkC := udpSink(t, p.InServer, p.ServerAddr6)
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

	res, err := analyze.Analyze([]analyze.Input{{Path: path}}, analyze.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, ifc := range res.Interfaces {
		if ifc.CaptureDropped != 0 {
			t.Fatalf("capture dropped %d records at %s: exact comparison impossible", ifc.CaptureDropped, ifc.Name)
		}
	}
	byName := map[string]*analyze.DirectionResult{}
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
		if roottest.InCI() {
			t.Fatalf("tshark not installed (make test installs it as root): %v", err)
		}
		t.Log("tshark not installed: skipping the Wireshark check (make test as root installs it)")
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
	needRoot(t, "ping")
	t.Parallel() // checks no timing: runs beside the others that check none
	bin := buildPi2hop(t)
	name := testInstance(7)
	t.Cleanup(func() { cleanupInstance(name, nil, &bytes.Buffer{}) })
	path := filepath.Join(t.TempDir(), "term.pcapng")
	cmd := exec.Command(bin, "shell", "--name", name, "--rate", "5mbit", "--capture", path, "--",
		"/bin/sh", "-c", "exec ping -q -i 0.01 -s 1000 $PI2HOP_HOST")
	cmd.Dir = t.TempDir()
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// SIGTERM while packets flow: 1.5 s (about 150 pings) after the
	// start-up message, however long the start-up took on a loaded machine.
	for deadline := time.Now().Add(15 * time.Second); !strings.Contains(stderr.String(), "\nstats: "); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("no start-up message within 15 s; stderr:\n%s", stderr.String())
		}
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
	// A cut file reads without an error now, so ask whether it was cut.
	if r.Truncated != nil {
		t.Fatalf("capture after SIGTERM is cut after %d packets: %s", n, r.Truncated)
	}
	if n < 50 {
		t.Errorf("capture after SIGTERM holds %d packets, want the ~150 pings' worth", n)
	}
	tsharkReads(t, path, "pi2hop: queue=C", "verdict=sent")
	checkGone(t, name)
}

// TestAnalyzeTcpdumpOfALabFlow: tcpdump on both TUNs of a lab pair while
// a Prague flow crosses the hop; analyze, matching ingress to egress,
// must find the CE marks the hop added and no invalid ECN transition.
func TestAnalyzeTcpdumpOfALabFlow(t *testing.T) {
	needRoot(t, "tcpdump")
	prefix := fmt.Sprintf("p2d%d", os.Getpid()%10000)
	dir := t.TempDir()
	p, _ := pairWithCapture(t, prefix, filepath.Join(dir, "hop.pcapng"), "--rate", "10mbit", "--delay", "5ms")

	// tcpdump -U writes each packet as it comes, so SIGTERM loses nothing.
	dump := func(ns, dev, file string) *exec.Cmd {
		cmd := exec.Command("ip", "netns", "exec", ns, "tcpdump", "-n", "-U", "-i", dev,
			"--time-stamp-precision=nano", "-w", file, "udp")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		return cmd
	}
	inFile, outFile := filepath.Join(dir, "in.pcap"), filepath.Join(dir, "out.pcap")
	dumps := []*exec.Cmd{dump(p.ClientNS, p.ClientDev, inFile), dump(p.ServerNS, p.ServerDev, outFile)}
	time.Sleep(500 * time.Millisecond) // let tcpdump attach

	var recv, send *net.UDPConn
	if err := p.InServer(func() (err error) {
		recv, err = net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.AddrPortFrom(p.ServerAddr, 0)))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer recv.Close()
	if err := p.InClient(func() (err error) {
		send, err = net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.AddrPortFrom(p.ClientAddr, 0)))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer send.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Second)
	defer cancel()
	cfg := flow.PragueConfig{ECN: flow.ECNL4S, Duration: 3 * time.Second}
	go flow.PragueRecv(ctx, recv, cfg, nil)
	if _, err := flow.PragueSend(ctx, send, recv.LocalAddr().(*net.UDPAddr).AddrPort(), cfg, nil); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // the last packets leave the delay line
	for _, d := range dumps {
		d.Process.Signal(syscall.SIGTERM)
		waitExit(t, d, 5*time.Second)
	}

	res, err := analyze.Analyze([]analyze.Input{{Path: inFile, Role: "in"}, {Path: outFile, Role: "out"}}, analyze.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Directions) == 0 {
		t.Fatal("analyze found no direction")
	}
	d := res.Directions[0]
	var marked, sent uint64
	for _, c := range d.Classes {
		marked += c.Marked
		sent += c.Sent
	}
	t.Logf("matched %d, unmatched in %d out %d; sent %d, CE added %d; invalid transitions %d",
		d.Matched, d.UnmatchedIn, d.UnmatchedOut, sent, marked, d.InvalidTransitions)
	if d.Matched < 1000 {
		t.Errorf("only %d packets matched between the two tcpdump captures", d.Matched)
	}
	if marked == 0 {
		t.Error("analyze found no CE marks added by the hop on a Prague flow at 10 Mbit/s")
	}
	if d.InvalidTransitions != 0 {
		t.Errorf("%d invalid ECN transitions", d.InvalidTransitions)
	}
}

// TestCaptureCostsTheHopNoPackets: both directions captured at 100 Mbit/s,
// each loaded to 60 %: the hop must drop nothing and the kernel's TUN
// ring must not overflow. If the writer falls behind, capture records
// are dropped instead (counted in the file), never packets.
//
// One run, no second try: at 60 % load the queue stays far below
// DualPI2's 15 ms target, so a drop means the hop (or its capture) fell
// behind by more than that.
func TestCaptureCostsTheHopNoPackets(t *testing.T) {
	needRoot(t)
	if lost := captureAt100Mbit(t, fmt.Sprintf("p2h%d", os.Getpid()%10000)); lost != "" {
		t.Fatal(lost)
	}
}

// captureAt100Mbit runs the load once and says what was lost, if anything.
func captureAt100Mbit(t *testing.T, prefix string) (lost string) {
	path := filepath.Join(t.TempDir(), "fast.pcapng")
	p, capt := pairWithCapture(t, prefix, path, "--rate", "100mbit")

	up := udpSink(t, p.InServer, p.ServerAddr)
	down := udpSink(t, p.InClient, p.ClientAddr)
	done := make(chan struct{})
	go func() {
		defer close(done)
		var conn *net.UDPConn
		if err := p.InServer(func() (err error) {
			conn, err = net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(down))
			return err
		}); err != nil {
			t.Error(err)
			return
		}
		defer conn.Close()
		paceUDP(conn, 60e6, 2*time.Second)
	}()
	blastUDP(t, p, up, aqm.NotECT, 60e6, 2*time.Second)
	<-done
	snap := waitIdle(t, p.Hop)
	p.Close()
	capt.Close()
	for _, ds := range []*hop.DirStats{&snap.Up, &snap.Down} {
		t.Logf("%s: in %d out %d dropped %d ring drops %d qdrops %v nobuf %d werr %d; owner worst lateness %v, sojourn C max %v",
			ds.Dir, ds.In, ds.Out, ds.Dropped(), ds.RingDrops, ds.QueueDrops, ds.NoBuffer, ds.WriteErrors,
			time.Duration(ds.Worst.Max), time.Duration(ds.SojournC.Quantile(1)))
		if ds.In < 10000 {
			lost += fmt.Sprintf("%s: only %d packets crossed, the senders were starved; ", ds.Dir, ds.In)
		}
		if ds.Dropped() != 0 || ds.RingDrops != 0 {
			lost += fmt.Sprintf("%s: hop dropped %d packets and the TUN ring %d while capturing; ", ds.Dir, ds.Dropped(), ds.RingDrops)
		}
	}
	var written, capLost uint64
	for _, s := range capt.Stats() {
		written += s.Written
		capLost += s.Dropped
	}
	t.Logf("capture: %d records written, %d dropped by the capture", written, capLost)
	return lost
}
