package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/flow"
	"github.com/pi2hop/pi2hop/flow/ecnudp"
	"github.com/pi2hop/pi2hop/netsys"
	"golang.org/x/sys/unix"
)

// TestStatsFlowsThroughShell: through a shell at 20 Mbit/s, three flows
// from the host to the shell at once for 2 s: a Prague flow (ECT(1)), a
// Not-ECT TCP flow at 2 Mbit/s and an ECT(0) UDP flow at 1 Mbit/s; then,
// alone for 1 s, an unresponsive ECT(1) UDP flow at 40 Mbit/s. stats
// --flows --json lists each in the down direction with its class, its
// bytes as the receiver counted them (payload plus the IP and transport
// headers of each packet, within 1 %), and, for the UDP flows, as many
// marks as the receiver saw CE. The unresponsive flow would be
// sanctioned by DOCSIS queue protection; the Prague flow is well-behaved.
func TestStatsFlowsThroughShell(t *testing.T) {
	needRoot(t, "bash")
	t.Parallel()
	name := testInstance(28)
	t.Cleanup(func() { cleanupInstance(name, nil, &bytes.Buffer{}) })
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	addr, stopShell := waitingShell(t, ctx, name, "--rate", "20mbit", "--delay", "2ms")
	defer stopShell()
	ns := name + "-shell"
	inShell := func(f func() error) error { return netsys.Do(ns, f) }

	// Phase 1: the three flows at once.
	// The host's sockets take any address: the route to the shell picks
	// the host's end of it.
	any4 := netip.IPv4Unspecified()
	prTx := listenUDPIn(t, nil, any4)
	prRx := listenUDPIn(t, inShell, addr)
	tcpLn := listenTCPIn(t, inShell, addr)
	e0Tx, e0Rx := listenUDPIn(t, nil, any4), listenUDPIn(t, inShell, addr)
	var wg sync.WaitGroup
	var prRecv flow.ReceiverSummary
	var prErr, prRecvErr, tcpErr, e0Err error
	var tcpGot int64
	var e0 udpCount
	rctx, rcancel := context.WithCancel(ctx)
	wg.Add(4)
	prDone := make(chan struct{})
	go func() {
		defer close(prDone)
		prRecv, prRecvErr = flow.PragueRecv(rctx, prRx, flow.PragueConfig{}, nil)
	}()
	go func() {
		defer wg.Done()
		// Without ECN validation: its ECT(0) probes, which a busy
		// machine's bunched marks can set off, would make the flow
		// "changed" (docs/flows.md), and this test is of the table's counting.
		_, prErr = flow.PragueSend(ctx, prTx, addrPort(prRx), flow.PragueConfig{Duration: 2 * time.Second, NoECNValidation: true}, nil)
	}()
	go func() {
		defer wg.Done()
		c, err := tcpLn.Accept()
		if err != nil {
			tcpErr = err
			return
		}
		defer c.Close()
		tcpGot, tcpErr = io.Copy(io.Discard, c)
	}()
	go func() {
		defer wg.Done()
		c, err := net.DialTCP("tcp", nil, tcpLn.Addr().(*net.TCPAddr))
		if err != nil {
			tcpErr = err
			return
		}
		defer c.Close()
		pace(2_000_000, 1000, 2*time.Second, func(b []byte) error { _, err := c.Write(b); return err })
	}()
	e0Done := make(chan struct{})
	go func() { defer close(e0Done); e0 = countUDP(rctx, e0Rx) }()
	go func() {
		defer wg.Done()
		if err := ecnudp.SetECN(e0Tx, aqm.ECT0); err != nil {
			e0Err = err
			return
		}
		to := addrPort(e0Rx)
		e0Err = pace(1_000_000, 500, 2*time.Second, func(b []byte) error { _, err := e0Tx.WriteToUDPAddrPort(b, to); return err })
	}()
	wg.Wait()
	time.Sleep(200 * time.Millisecond) // what is still in the hop's queue and delay line arrives
	rcancel()
	<-e0Done
	<-prDone
	for what, err := range map[string]error{"prague send": prErr, "tcp": tcpErr, "ect(0) udp": e0Err} {
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	if prRecvErr != nil && !errors.Is(prRecvErr, context.Canceled) {
		t.Fatalf("prague receive: %v", prRecvErr)
	}

	// Phase 2: an unresponsive ECT(1) flow at twice the link rate.
	e1Tx, e1Rx := listenUDPIn(t, nil, any4), listenUDPIn(t, inShell, addr)
	var e1 udpCount
	r2ctx, r2cancel := context.WithCancel(ctx)
	e1Done := make(chan struct{})
	go func() { defer close(e1Done); e1 = countUDP(r2ctx, e1Rx) }()
	if err := ecnudp.SetECN(e1Tx, aqm.ECT1); err != nil {
		t.Fatal(err)
	}
	to := addrPort(e1Rx)
	if err := pace(40_000_000, 1400, time.Second, func(b []byte) error { _, err := e1Tx.WriteToUDPAddrPort(b, to); return err }); err != nil {
		t.Fatalf("unresponsive flow: %v", err)
	}
	time.Sleep(300 * time.Millisecond)
	r2cancel()
	<-e1Done

	var out, errb bytes.Buffer
	if err := Run(ctx, []string{"stats", "--name", name, "--flows", "--json", "--top", "20"}, strings.NewReader(""), &out, &errb); err != nil {
		t.Fatalf("stats --flows: %v\n%s", err, errb.String())
	}
	var text bytes.Buffer
	if err := Run(ctx, []string{"stats", "--name", name, "--flows"}, strings.NewReader(""), &text, &errb); err != nil {
		t.Fatalf("stats --flows: %v\n%s", err, errb.String())
	}
	if !strings.Contains(text.String(), "would be sanctioned by DOCSIS queue protection") {
		t.Errorf("stats --flows shows no sanctioned flow:\n%s", text.String())
	}
	t.Logf("stats --flows:\n%s", text.String())
	// --every repeats until interrupted: a line per period.
	var every bytes.Buffer
	ectx, ecancel := context.WithTimeout(ctx, 350*time.Millisecond)
	err := Run(ectx, []string{"stats", "--name", name, "--flows", "--json", "--every", "100ms"}, strings.NewReader(""), &every, &errb)
	ecancel()
	if n := strings.Count(every.String(), "\n"); err != nil || n < 2 {
		t.Errorf("stats --flows --every 100ms for 350 ms: %v, %d lines; want 2 or more\n%s", err, n, errb.String())
	}
	var got struct {
		Directions []struct {
			Dir string `json:"dir"`
			Top []struct {
				Proto, Src, Dst, Class, Verdict string
				OutRaw                          map[string]struct{ Packets, Bytes uint64 } `json:"out"`
				Marks                           uint64                                     `json:"marks"`
				P99                             float64                                    `json:"sojourn_p99_ms"`
				QProt                           *struct {
					Sanction bool   `json:"would_sanction"`
					Packets  uint64 `json:"sanctioned_packets"`
					Recent   uint64 `json:"recent_sanctioned_packets"`
				} `json:"qprot"`
			} `json:"top"`
		} `json:"directions"`
	}
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("stats --flows --json: %v\n%s", err, out.String())
	}
	type want struct {
		proto, class string
		port         uint16 // the receiver's
		bytes        int64  // as the receiver counted them, headers included
		ce           int64  // -1: not checked
		sanction     int    // 1 would be sanctioned, 0 well-behaved, -1 not L4S
	}
	wants := []want{
		{"udp", "L4S", addrPort(prRx).Port(), prRecv.Bytes + 28*prRecv.Packets, prRecv.CE, 0},
		{"tcp", "Not-ECT", uint16(tcpLn.Addr().(*net.TCPAddr).Port), -1, 0, -1},
		{"udp", "Classic ECN", addrPort(e0Rx).Port(), e0.bytes + 28*e0.packets, e0.ce, -1},
		{"udp", "L4S", addrPort(e1Rx).Port(), e1.bytes + 28*e1.packets, e1.ce, 1},
	}
	var down []int
	for i, d := range got.Directions {
		if d.Dir == "down" {
			down = append(down, i)
		}
	}
	if len(down) != 1 {
		t.Fatalf("no down direction in %s", out.String())
	}
	flows := got.Directions[down[0]].Top
	for _, w := range wants {
		dst := netip.AddrPortFrom(addr, w.port).String()
		found := false
		for _, f := range flows {
			if f.Dst != dst || f.Proto != w.proto {
				continue
			}
			found = true
			var pkts, bytes uint64
			for _, c := range f.OutRaw {
				pkts += c.Packets
				bytes += c.Bytes
			}
			if f.Class != w.class {
				t.Errorf("%s flow to %s: class %q, want %q", w.proto, dst, f.Class, w.class)
			}
			if w.bytes < 0 { // TCP: the receiver counts payload; headers are 52 bytes with timestamps
				w.bytes = tcpGot + 52*int64(pkts)
			}
			if d := float64(bytes) - float64(w.bytes); d > 0.01*float64(w.bytes) || d < -0.01*float64(w.bytes) {
				t.Errorf("%s flow to %s (%s): %d bytes out of the hop, the receiver's count %d: more than 1 %% apart", w.proto, dst, w.class, bytes, w.bytes)
			}
			if w.ce >= 0 && int64(f.Marks) != w.ce {
				t.Errorf("%s flow to %s (%s): %d marks, the receiver saw %d CE", w.proto, dst, w.class, f.Marks, w.ce)
			}
			if w.sanction >= 0 {
				if f.QProt == nil || f.QProt.Sanction != (w.sanction == 1) {
					t.Errorf("%s flow to %s (%s): verdict %q, want sanctioned %v", w.proto, dst, w.class, f.Verdict, w.sanction == 1)
				}
			}
			t.Logf("%s %s -> %s: %s, %d packets %d bytes (receiver %d), %d marks, sojourn p99 %.2f ms: %s", f.Proto, f.Src, f.Dst, f.Class, pkts, bytes, w.bytes, f.Marks, f.P99, f.Verdict)
			if f.QProt != nil {
				t.Logf("  queue protection: %d packets would be sanctioned, %d in the flow's last second", f.QProt.Packets, f.QProt.Recent)
			}
		}
		if !found {
			t.Errorf("no %s flow to %s in %s", w.proto, dst, out.String())
		}
	}
}

// addrPort is the local address of c.
func addrPort(c *net.UDPConn) netip.AddrPort { return c.LocalAddr().(*net.UDPAddr).AddrPort() }

// listenUDPIn opens a UDP socket on addr, in the namespace in runs its
// function in (the host's when nil).
func listenUDPIn(t *testing.T, in func(func() error) error, addr netip.Addr) *net.UDPConn {
	t.Helper()
	var c *net.UDPConn
	open := func() (err error) {
		c, err = net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.AddrPortFrom(addr, 0)))
		if err != nil {
			return err
		}
		// Room for what the hop delivers while the test's receiver waits
		// for a CPU: a datagram lost in the socket is one the receiver
		// never counts.
		raw, err := c.SyscallConn()
		if err != nil {
			return err
		}
		var serr error
		raw.Control(func(fd uintptr) { serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, 16<<20) })
		if serr != nil {
			return serr
		}
		return ecnudp.EnableReceive(c)
	}
	var err error
	if in == nil {
		err = open()
	} else {
		err = in(open)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// listenTCPIn listens on addr in a namespace.
func listenTCPIn(t *testing.T, in func(func() error) error, addr netip.Addr) *net.TCPListener {
	t.Helper()
	var ln *net.TCPListener
	if err := in(func() (err error) {
		ln, err = net.ListenTCP("tcp", net.TCPAddrFromAddrPort(netip.AddrPortFrom(addr, 0)))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln
}

// pace calls send with size-byte buffers at bps (payload) for d, catching
// up after each sleep so the average holds whatever the sleep's lateness.
func pace(bps, size int, d time.Duration, send func([]byte) error) error {
	b := make([]byte, size)
	gap := time.Duration(int64(size) * 8 * int64(time.Second) / int64(bps))
	start := time.Now()
	for n := 0; ; n++ {
		at := start.Add(time.Duration(n) * gap)
		if at.Sub(start) >= d {
			return nil
		}
		if w := time.Until(at); w > 0 {
			time.Sleep(w)
		}
		if err := send(b); err != nil {
			return err
		}
	}
}

// waitingShell runs `pi2hop shell` in process with flags and a command
// that waits until stop is called, and returns the shell side's address
// once the command runs. stop ends the command and waits for the shell
// (once; later calls do nothing), failing the test if it erred.
func waitingShell(t *testing.T, ctx context.Context, name string, flags ...string) (addr netip.Addr, stop func()) {
	t.Helper()
	dir := t.TempDir()
	envFile, stopFile := filepath.Join(dir, "env"), filepath.Join(dir, "stop")
	// Bash alone: the line ends in "end", so a half-written one is not
	// taken; read -t is the pause.
	script := fmt.Sprintf(`echo $PI2HOP_HOST $PI2HOP_ADDR end > %s; while [ ! -e %s ]; do read -t 0.05 <> <(:) || :; done`,
		envFile, stopFile)
	shellDone := make(chan error, 1)
	var shellErr bytes.Buffer
	args := append(append([]string{"shell", "--name", name}, flags...), "--", "/bin/bash", "-c", script)
	go func() { shellDone <- Run(ctx, args, strings.NewReader(""), io.Discard, &shellErr) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			os.WriteFile(stopFile, nil, 0o644)
			select {
			case err := <-shellDone:
				if err != nil {
					t.Errorf("shell: %v\n%s", err, shellErr.String())
				}
			case <-time.After(10 * time.Second):
				t.Errorf("the shell did not return within 10 s of its command's end")
			}
		})
	}
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if b, err := os.ReadFile(envFile); err == nil {
			if f := strings.Fields(string(b)); len(f) == 3 && f[2] == "end" {
				return netip.MustParseAddr(f[1]), stop
			}
		}
		if time.Now().After(deadline) {
			os.WriteFile(stopFile, nil, 0o644)
			t.Fatalf("waited 15 s for the shell's command to start:\n%s", shellErr.String())
		}
	}
}

// udpCount is what a UDP receiver counted: datagrams, payload bytes and
// those that arrived CE.
type udpCount struct{ packets, bytes, ce int64 }

// countUDP reads c until ctx is done.
func countUDP(ctx context.Context, c *net.UDPConn) udpCount {
	var n udpCount
	stop := context.AfterFunc(ctx, func() { c.SetReadDeadline(time.Unix(1, 0)) })
	defer stop()
	buf, oob := make([]byte, 65536), make([]byte, 256)
	for {
		k, ok, _, _, err := c.ReadMsgUDPAddrPort(buf, oob)
		if err != nil {
			return n
		}
		n.packets++
		n.bytes += int64(k)
		if e, has := ecnudp.ParseECN(oob[:ok]); has && e == aqm.CE {
			n.ce++
		}
	}
}
