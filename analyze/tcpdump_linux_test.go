package analyze

import (
	"bufio"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/internal/roottest"
)

// startTcpdump captures UDP to port on iface into path and returns once
// tcpdump is listening; stop ends it (SIGTERM, so the file is complete).
func startTcpdump(t *testing.T, tcpdump, iface, path string, port int) (stop func()) {
	t.Helper()
	// Immediate mode: otherwise TPACKET_V3 holds packets in a block for
	// up to a second, and SIGTERM can come first.
	cmd := exec.Command(tcpdump, "-i", iface, "-U", "--immediate-mode", "-n", "--time-stamp-precision=nano",
		"-w", path, fmt.Sprintf("udp and dst port %d and host 127.0.0.1", port))
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	listening := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if strings.Contains(sc.Text(), "listening on") {
				close(listening)
			}
		}
	}()
	select {
	case <-listening:
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("tcpdump -i %s did not start", iface)
	}
	stopped := false
	stop = func() {
		if !stopped {
			stopped = true
			cmd.Process.Signal(syscall.SIGTERM)
			cmd.Wait()
		}
	}
	t.Cleanup(stop)
	return stop
}

// TestAnalyzeRealTcpdump sends ECT(1) and ECT(0) UDP over 127.0.0.1 while
// tcpdump captures it on lo (Ethernet framing) and on "any" (Linux cooked
// v2), and checks that analysis counts every packet by codepoint.
func TestAnalyzeRealTcpdump(t *testing.T) {
	roottest.Need(t, "tcpdump")
	tcpdump, err := exec.LookPath("tcpdump")
	if err != nil {
		t.Fatal(err)
	}
	// A receiver, so the sends are not refused by ICMP port unreachable.
	rx, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer rx.Close()
	port := rx.LocalAddr().(*net.UDPAddr).Port
	dir := t.TempDir()
	lo, any := filepath.Join(dir, "lo.pcap"), filepath.Join(dir, "any.pcap")
	stopLo := startTcpdump(t, tcpdump, "lo", lo, port)
	stopAny := startTcpdump(t, tcpdump, "any", any, port)

	const perCodepoint = 20
	for _, ecn := range []aqm.ECN{aqm.ECT1, aqm.ECT0} {
		conn, err := net.Dial("udp4", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			t.Fatal(err)
		}
		raw, err := conn.(*net.UDPConn).SyscallConn()
		if err != nil {
			t.Fatal(err)
		}
		var serr error
		raw.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.IPPROTO_IP, syscall.IP_TOS, int(ecn))
		})
		if serr != nil {
			t.Fatal(serr)
		}
		for range perCodepoint {
			if _, err := conn.Write(make([]byte, 100)); err != nil {
				t.Fatal(err)
			}
			time.Sleep(time.Millisecond) // gentle: tcpdump -i any drops bursts on a busy box
		}
		conn.Close()
	}
	time.Sleep(200 * time.Millisecond) // let tcpdump see the last packets
	stopLo()
	stopAny()

	for _, path := range []string{lo, any} {
		// What tcpdump itself decodes from the file, by TOS byte.
		out, err := exec.Command(tcpdump, "-r", path, "-nv").Output()
		if err != nil {
			t.Fatal(err)
		}
		ect1 := uint64(strings.Count(string(out), "tos 0x1,"))
		ect0 := uint64(strings.Count(string(out), "tos 0x2,"))
		if ect1 == 0 || ect0 == 0 {
			t.Fatalf("%s: tcpdump captured %d ECT(1) and %d ECT(0) packets; want some of each:\n%s", path, ect1, ect0, out)
		}
		res, err := Analyze([]Input{{Path: path}}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Directions) != 1 {
			t.Fatalf("%s: %d directions, want 1", path, len(res.Directions))
		}
		d := res.Directions[0]
		l, c := d.Class(aqm.L4S), d.Class(aqm.Classic)
		if l.In != ect1 || c.In != ect0 || l.InBytes != ect1*128 || c.InBytes != ect0*128 {
			t.Errorf("%s: L %d packets %d bytes, C %d packets %d bytes; tcpdump saw %d ECT(1), %d ECT(0) of 128 bytes",
				filepath.Base(path), l.In, l.InBytes, c.In, c.InBytes, ect1, ect0)
		}
		if len(d.Flows) != 2 || len(d.ChecksumErrors) != 0 || res.Files[0].Skipped != 0 {
			t.Errorf("%s: %d flows (want 2), checksum errors %v, skipped %d", filepath.Base(path), len(d.Flows), d.ChecksumErrors, res.Files[0].Skipped)
		}
	}
}
