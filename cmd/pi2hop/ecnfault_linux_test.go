package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/netip"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/flow/ecnudp"
	"github.com/pi2hop/pi2hop/netsys"
	"github.com/pi2hop/pi2hop/pcap"
	"github.com/pi2hop/pi2hop/shaper"
)

// Through one shell, each ECN path fault set live with `set`: a receiver
// on the host reading every datagram's codepoint (IP_RECVTOS,
// IPV6_RECVTCLASS) sees exactly the faulted codepoints of ECT(1), ECT(0),
// CE and Not-ECT datagrams from the shell, over IPv4 and IPv6. IPv4
// datagrams arriving at all shows their header checksums were right (the
// kernel drops a bad one). `set --ecn-fault none` then restores the path
// at once. Measures no timing: parallel.
func TestShellECNFaultsLive(t *testing.T) {
	needRoot(t, "sh")
	t.Parallel()
	name := testInstance(161) // 60..62 are TestShellNATEndsLeaveNothing's
	t.Cleanup(func() { cleanupInstance(name, nil, &bytes.Buffer{}) })

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel) // after the shell has ended (cleanups run last first)
	// The shell's command says where things are, then waits for its input
	// to close.
	stdinR, stdinW := io.Pipe()
	stdoutR, stdoutW := io.Pipe()
	var stderr bytes.Buffer
	done := make(chan error, 1)
	capFile := filepath.Join(t.TempDir(), "faults.pcapng")
	go func() {
		done <- Run(ctx, []string{"shell", "--name", name, "--rate", "100mbit", "--capture", capFile, "--", "/bin/sh", "-c",
			`echo "$PI2HOP_NETNS $PI2HOP_HOST $PI2HOP_HOST6"; read x; exit 0`}, stdinR, stdoutW, &stderr)
		stdoutW.Close()
	}()
	var ended bool
	end := func() {
		if ended {
			return
		}
		ended = true
		stdinW.Close()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("shell: %v\n%s", err, stderr.String())
			}
		case <-time.After(10 * time.Second):
			t.Error("shell did not end within 10 s of its input closing")
		}
		checkGone(t, name)
	}
	t.Cleanup(end)
	lines := make(chan string, 1)
	go func() {
		l, _ := bufio.NewReader(stdoutR).ReadString('\n')
		lines <- l
		io.Copy(io.Discard, stdoutR)
	}()
	var where []string
	select {
	case l := <-lines:
		where = strings.Fields(l)
	case <-time.After(20 * time.Second):
		t.Fatalf("the shell's command did not start within 20 s\n%s", stderr.String())
	}
	if len(where) != 3 {
		t.Fatalf("shell command printed %q, want namespace and two host addresses\n%s", where, stderr.String())
	}
	ns := where[0]

	type path struct {
		name string
		rx   *net.UDPConn // on the host
		tx   *net.UDPConn // in the shell's namespace
	}
	var paths []path
	for _, v := range []struct{ net, host string }{{"udp4", where[1]}, {"udp6", where[2]}} {
		host := netip.MustParseAddr(v.host)
		rx, err := net.ListenUDP(v.net, net.UDPAddrFromAddrPort(netip.AddrPortFrom(host, 0)))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { rx.Close() })
		if err := ecnudp.EnableReceive(rx); err != nil {
			t.Fatal(err)
		}
		var tx *net.UDPConn
		if err := netsys.Do(ns, func() (err error) {
			tx, err = net.DialUDP(v.net, nil, rx.LocalAddr().(*net.UDPAddr))
			return err
		}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { tx.Close() })
		paths = append(paths, path{v.net, rx, tx})
	}

	// send sends one datagram of each codepoint in turn, Not-ECT last (no
	// fault drops it, and the idle link keeps the order), and returns what
	// arrived, by codepoint sent: the codepoint received, or "lost".
	seq := 0
	send := func(p path) (map[aqm.ECN]string, error) {
		seq++
		sent := []aqm.ECN{aqm.ECT1, aqm.ECT0, aqm.CE, aqm.NotECT}
		for _, e := range sent {
			if err := ecnudp.SetECN(p.tx, e); err != nil {
				return nil, err
			}
			if _, err := fmt.Fprintf(p.tx, "%d %d", seq, e); err != nil {
				return nil, err
			}
		}
		got := map[aqm.ECN]string{aqm.ECT1: "lost", aqm.ECT0: "lost", aqm.CE: "lost"}
		buf, oob := make([]byte, 64), make([]byte, 256)
		p.rx.SetReadDeadline(time.Now().Add(2 * time.Second))
		for {
			n, oobn, _, _, err := p.rx.ReadMsgUDP(buf, oob)
			if err != nil {
				return got, fmt.Errorf("waiting for the Not-ECT datagram: %w", err)
			}
			var s, e int
			if _, err := fmt.Sscanf(string(buf[:n]), "%d %d", &s, &e); err != nil || s != seq {
				continue // a late one from an earlier round
			}
			cp, ok := ecnudp.ParseECN(oob[:oobn])
			if !ok {
				return got, fmt.Errorf("no codepoint with the datagram")
			}
			got[aqm.ECN(e)] = cp.String()
			if aqm.ECN(e) == aqm.NotECT {
				return got, nil
			}
		}
	}
	set := func(fault string) {
		t.Helper()
		var out bytes.Buffer
		if err := Run(ctx, []string{"set", "--name", name, "--ecn-fault", fault}, strings.NewReader(""), &out, &out); err != nil {
			t.Fatalf("set --ecn-fault %s: %v\n%s", fault, err, out.String())
		}
	}

	const N, E1, E0, CE, L = "Not-ECT", "ECT(1)", "ECT(0)", "CE", "lost"
	for _, tt := range []struct {
		fault string
		want  [4]string // ECT(1), ECT(0), CE, Not-ECT sent
	}{
		{"bleach", [4]string{N, N, N, N}},
		{"tos-zero", [4]string{N, N, N, N}},
		{"ect1-to-ect0", [4]string{E0, E0, CE, N}},
		{"ect0-to-ect1", [4]string{E1, E1, CE, N}},
		{"ce-bleach", [4]string{E1, E0, E1, N}},
		{"mangle", [4]string{CE, CE, CE, N}},
		{"drop-ect", [4]string{L, L, L, N}},
		{"bleach,after", [4]string{N, N, N, N}},
		{"none", [4]string{E1, E0, CE, N}},
	} {
		set(tt.fault)
		setAt := time.Now()
		for _, p := range paths {
			got, err := send(p)
			if err != nil {
				t.Errorf("%s, %s: %v (got %v)", tt.fault, p.name, err, got)
				continue
			}
			have := [4]string{got[aqm.ECT1], got[aqm.ECT0], got[aqm.CE], N}
			if have != tt.want {
				t.Errorf("%s, %s: ECT(1), ECT(0), CE, Not-ECT arrived as %v, want %v", tt.fault, p.name, have, tt.want)
			}
		}
		if tt.fault == "none" {
			if d := time.Since(setAt); d > time.Second {
				t.Errorf("the path took %v after set --ecn-fault none to carry every codepoint as sent; want within 1 s", d)
			}
		}
	}
	var out bytes.Buffer
	if err := Run(ctx, []string{"stats", "--name", name}, strings.NewReader(""), &out, &out); err != nil {
		t.Fatalf("stats: %v\n%s", err, out.String())
	}
	// Uplink: bleach before and after the queue on both paths, three
	// ECN-capable datagrams each time.
	if !strings.Contains(out.String(), "ecn fault none: rewrote or dropped bleach 12,") {
		t.Errorf("stats do not count the faults by kind:\n%s", out.String())
	}

	// The capture, written as the shell ends, annotates the faulted
	// packets with the kind and the codepoint before and after.
	end()
	r, err := pcap.Open(capFile)
	if err != nil {
		t.Fatalf("capture: %v", err)
	}
	defer r.Close()
	seen := map[string]int{}
	for {
		p, err := r.Next()
		if err != nil {
			break
		}
		if p.HasAnn && p.Ann.Fault != shaper.FaultNone && p.Interface == "up-out" {
			seen[fmt.Sprintf("%s %v->%v", p.Ann.Fault, p.Ann.FaultFrom, p.Ann.FaultTo)]++
		}
	}
	for _, want := range []string{"bleach ECT(1)->Not-ECT", "ce-bleach CE->ECT(1)", "ect1-to-ect0 ECT(1)->ECT(0)", "mangle ECT(0)->CE", "tos-zero CE->Not-ECT"} {
		if seen[want] != 2 && !(strings.HasPrefix(want, "bleach") && seen[want] == 4) {
			t.Errorf("capture annotates %d packets up-out with %q, want one per path (bleach: before and after); saw %v", seen[want], want, seen)
		}
	}
}
