package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pi2hop/pi2hop/netsys"
)

// Passive RTT through shell --delay 10ms (20 ms base): a bulk iperf3
// transfer's round trip as the hop times it (the sum of its halves)
// against the sender's own smoothed RTT (tcpi_rtt) read with ss -ti
// during the run: medians within 2 ms or 10 %, whichever is larger, and a p99
// of 20 ms or more. Then the same without TCP timestamps in the shell's
// namespace: the flow is timed by sequence and ACK numbers. And a
// QUIC-like UDP flow (a long header, then short headers with a constant
// spin bit both ways) is said not to spin. analyze of the run's capture
// times the timestamped flow as the hop did: medians within 0.5 ms.
func TestShellPassiveRTT(t *testing.T) {
	needRoot(t, "bash", "iperf3", "ss", "ip")
	name := testInstance(180)
	t.Cleanup(func() { cleanupInstance(name, nil, &bytes.Buffer{}) })
	capFile := filepath.Join(t.TempDir(), "run.pcapng")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	addr, stop := waitingShell(t, ctx, name, "--rate", "20mbit", "--delay", "10ms", "--capture", capFile)
	defer stop()
	ns := name + "-shell"
	inShell := func(f func() error) error { return netsys.Do(ns, f) }

	// QUIC without the spin bit: an Initial each way, then 80 short
	// headers each way, the spin bit 0 in all.
	hostU, shellU := listenUDPIn(t, nil, netip.IPv4Unspecified()), listenUDPIn(t, inShell, addr)
	to := shellU.LocalAddr().(*net.UDPAddr)
	initial := append([]byte{0xc0, 0, 0, 0, 1, 8, 1, 2, 3, 4, 5, 6, 7, 8}, make([]byte, 1186)...)
	short := append([]byte{0x40, 1, 2, 3, 4, 5, 6, 7, 8}, make([]byte, 200)...)
	buf := make([]byte, 2048)
	for i := range 81 {
		p := short
		if i == 0 {
			p = initial
		}
		if _, err := hostU.WriteToUDP(p, to); err != nil {
			t.Fatal(err)
		}
		shellU.SetReadDeadline(time.Now().Add(5 * time.Second))
		_, from, err := shellU.ReadFromUDP(buf)
		if err != nil {
			t.Fatalf("packet %d of the QUIC-like flow: %v", i, err)
		}
		if _, err := shellU.WriteToUDP(p, from); err != nil {
			t.Fatal(err)
		}
		hostU.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, _, err := hostU.ReadFromUDP(buf); err != nil {
			t.Fatalf("the answer to packet %d of the QUIC-like flow: %v", i, err)
		}
	}
	if r := flowRTTOf(t, ctx, name, "udp", uint16(to.Port)); r.Method != "quic-spin" || r.Status != "no RTT: encrypted, no spin bit" {
		t.Errorf("the QUIC flow without the spin bit: RTT %+v, want quic-spin, no spin bit", r)
	}
	var text, errb bytes.Buffer
	if err := Run(ctx, []string{"stats", "--name", name, "--flows"}, strings.NewReader(""), &text, &errb); err != nil {
		t.Fatalf("stats --flows: %v\n%s", err, errb.String())
	}
	if !strings.Contains(text.String(), "rtt p50/p99 (client+server)") || !strings.Contains(text.String(), "no spin") {
		t.Errorf("stats --flows shows no RTT column with the QUIC flow's \"no spin\":\n%s", text.String())
	}

	var tsFlow struct {
		port uint16
		p50  float64
	}
	for _, c := range []struct {
		method     string
		timestamps bool
	}{{"tcp-timestamps", true}, {"tcp-seq", false}} {
		if !c.timestamps {
			if err := inShell(func() error {
				return os.WriteFile("/proc/sys/net/ipv4/tcp_timestamps", []byte("0"), 0o644)
			}); err != nil {
				t.Fatal(err)
			}
		}
		srtt, port := iperf3Bulk(t, ctx, ns, addr, 3*time.Second)
		r := flowRTTOf(t, ctx, name, "tcp", port)
		t.Logf("%s: the sender's srtt median %.2f ms; the hop's %+v", c.method, srtt, r)
		if r.Method != c.method || r.Sum.N == 0 {
			t.Errorf("%s: the flow's RTT %+v, want timed by %s, both halves", c.method, r, c.method)
			continue
		}
		if !c.timestamps {
			continue // fewer samples, of other packets: the method is what is checked
		}
		tsFlow.port, tsFlow.p50 = port, r.Sum.P50Ms
		if d := r.Sum.P50Ms - srtt; d > max(2, 0.1*srtt) || -d > max(2, 0.1*srtt) {
			t.Errorf("the hop's RTT median %.2f ms, the sender's %.2f ms: want within max(2 ms, 10 %%)", r.Sum.P50Ms, srtt)
		}
		if r.Sum.P99Ms < 20 {
			t.Errorf("the hop's RTT p99 %.2f ms, want 20 ms or more (the base RTT)", r.Sum.P99Ms)
		}
	}

	// analyze of the capture, once the shell has written it whole.
	stop()
	var out bytes.Buffer
	errb.Reset()
	if err := Run(ctx, []string{"analyze", "--json", capFile}, strings.NewReader(""), &out, &errb); err != nil {
		t.Fatalf("analyze: %v\n%s", err, errb.String())
	}
	var res struct {
		RTT struct {
			Flows []struct {
				Flow   string `json:"flow"`
				Method string `json:"method"`
				Sum    struct {
					P50Ms float64 `json:"p50_ms"`
				} `json:"sum"`
			} `json:"flows"`
		} `json:"rtt"`
	}
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		t.Fatalf("analyze --json: %v\n%s", err, out.String())
	}
	found := false
	for _, f := range res.RTT.Flows {
		port := fmt.Sprintf(":%d", tsFlow.port)
		if strings.HasPrefix(f.Flow, "tcp ") && (strings.HasSuffix(f.Flow, port) || strings.Contains(f.Flow, port+" >")) {
			found = true
			t.Logf("analyze: %s %s, sum p50 %.2f ms; the hop's %.2f ms", f.Flow, f.Method, f.Sum.P50Ms, tsFlow.p50)
			// The same packets, timed by the same rule: iperf3Bulk
			// returned once the connection had closed, so the hop's
			// figure was read after the flow's last packet, as the
			// capture ends after it.
			if d := f.Sum.P50Ms - tsFlow.p50; d > 0.5 || d < -0.5 {
				t.Errorf("analyze's RTT median %.2f ms, the hop's %.2f ms: want within 0.5 ms", f.Sum.P50Ms, tsFlow.p50)
			}
		}
	}
	if !found {
		t.Errorf("analyze times no TCP flow of port %d: %+v", tsFlow.port, res.RTT.Flows)
	}
}

// iperf3Bulk runs an iperf3 transfer of d from the host (the hop's
// server side) to an iperf3 server in namespace ns at addr (the shell,
// its client side), and reads the sender's smoothed RTT as
// `ss -ti` prints it (tcpi_rtt) every 50 ms while it runs. It returns
// their median (ms) and the data connection's port on the host (iperf3's
// control connection goes to the same server port), once the
// connection is closed, so that every packet of it has crossed the hop.
func iperf3Bulk(t *testing.T, ctx context.Context, ns string, addr netip.Addr, d time.Duration) (srtt float64, port uint16) {
	t.Helper()
	const serverPort = "5201" // the shell's namespace is the test's own
	var serverOut bytes.Buffer
	server := exec.CommandContext(ctx, "ip", "netns", "exec", ns, "iperf3", "-s", "-1", "-B", addr.String(), "-p", serverPort)
	server.Stdout, server.Stderr = &serverOut, &serverOut
	if err := server.Start(); err != nil {
		t.Fatal(err)
	}
	serverDone := make(chan error, 1)
	go func() { serverDone <- server.Wait() }()
	defer server.Process.Kill()
	// A probe connection would be the one client iperf3 -s -1 serves:
	// the listening socket is watched instead.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		out, _ := exec.Command("ip", "netns", "exec", ns, "ss", "-tlnH", "sport", "= :"+serverPort).Output()
		if len(bytes.TrimSpace(out)) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("waited 10 s for iperf3 -s to listen in %s:\n%s", ns, serverOut.String())
		}
	}
	var clientOut bytes.Buffer
	client := exec.CommandContext(ctx, "iperf3", "-c", addr.String(), "-p", serverPort, "-t", fmt.Sprint(d.Seconds()))
	client.Stdout, client.Stderr = &clientOut, &clientOut
	if err := client.Start(); err != nil {
		t.Fatal(err)
	}
	clientDone := make(chan error, 1)
	go func() { clientDone <- client.Wait() }()
	var samples []float64
	dst := []string{"dst", addr.String(), "dport", "= :" + serverPort}
	for tick := time.NewTicker(50 * time.Millisecond); ; {
		select {
		case err := <-clientDone:
			tick.Stop()
			if err != nil {
				t.Fatalf("iperf3 -c: %v\n%s", err, clientOut.String())
			}
			if len(samples) == 0 {
				t.Fatalf("ss -ti showed no tcpi_rtt of iperf3's data connection during the run")
			}
			select {
			case <-serverDone:
			case <-time.After(10 * time.Second):
				t.Fatalf("iperf3 -s -1 did not exit within 10 s of its client:\n%s", serverOut.String())
			}
			// The sockets still open to the server: none, or only
			// those whose data and FIN were all acknowledged.
			for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
				out, err := exec.Command("ss", append([]string{"-tnH", "state", "established", "state", "fin-wait-1", "state", "close-wait", "state", "last-ack", "state", "closing"}, dst...)...).Output()
				if err != nil {
					t.Fatalf("ss: %v", err)
				}
				if len(bytes.TrimSpace(out)) == 0 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("iperf3's connections still open 10 s after it ended:\n%s", out)
				}
			}
			slices.Sort(samples)
			return samples[len(samples)/2], port
		case <-tick.C:
			out, err := exec.Command("ss", append([]string{"-tinH"}, dst...)...).Output()
			if err != nil {
				t.Fatalf("ss -ti: %v", err)
			}
			if p, rtt, ok := ssDataConn(string(out)); ok {
				samples, port = append(samples, rtt), p
			}
		}
	}
}

// ssDataConn reads `ss -tinH` output: of the sockets it lists, the one
// that has had the most bytes acknowledged, if that is past iperf3's
// control traffic (64 KB), and its local port and rtt (ms).
func ssDataConn(out string) (port uint16, rtt float64, ok bool) {
	var most uint64
	var cur uint16
	for _, line := range strings.Split(out, "\n") {
		if line != "" && line[0] != ' ' && line[0] != '\t' {
			// A socket: state, recv-q, send-q, local address:port, peer.
			cur = 0
			if f := strings.Fields(line); len(f) >= 4 {
				if ap, err := netip.ParseAddrPort(f[3]); err == nil {
					cur = ap.Port()
				}
			}
			continue
		}
		var acked uint64
		r := -1.0
		for _, f := range strings.Fields(line) {
			if v, found := strings.CutPrefix(f, "bytes_acked:"); found {
				acked, _ = strconv.ParseUint(v, 10, 64)
			} else if v, found := strings.CutPrefix(f, "rtt:"); found {
				v, _, _ = strings.Cut(v, "/")
				if x, err := strconv.ParseFloat(v, 64); err == nil {
					r = x
				}
			}
		}
		if cur != 0 && r >= 0 && acked > 64<<10 && acked > most {
			most, port, rtt, ok = acked, cur, r, true
		}
	}
	return port, rtt, ok
}

// flowRTTOf returns the RTT stats --flows --json gives the flow of proto
// with port at one end.
func flowRTTOf(t *testing.T, ctx context.Context, name, proto string, port uint16) (r struct {
	Method string `json:"method"`
	Status string `json:"status"`
	Sum    struct {
		N     uint64  `json:"n"`
		P50Ms float64 `json:"p50_ms"`
		P99Ms float64 `json:"p99_ms"`
	} `json:"sum"`
}) {
	t.Helper()
	var out, errb bytes.Buffer
	if err := Run(ctx, []string{"stats", "--name", name, "--flows", "--json", "--top", "50"}, strings.NewReader(""), &out, &errb); err != nil {
		t.Fatalf("stats --flows: %v\n%s", err, errb.String())
	}
	var got struct {
		Dirs []struct {
			Top []struct {
				Proto string          `json:"proto"`
				Src   string          `json:"src"`
				Dst   string          `json:"dst"`
				RTT   json.RawMessage `json:"rtt"`
			} `json:"top"`
		} `json:"directions"`
	}
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("stats --flows --json: %v\n%s", err, out.String())
	}
	suffix := fmt.Sprintf(":%d", port)
	for _, d := range got.Dirs {
		for _, f := range d.Top {
			if f.Proto == proto && (strings.HasSuffix(f.Src, suffix) || strings.HasSuffix(f.Dst, suffix)) && f.RTT != nil {
				if err := json.Unmarshal(f.RTT, &r); err != nil {
					t.Fatal(err)
				}
				return r
			}
		}
	}
	t.Fatalf("no %s flow of port %d with an RTT in\n%s", proto, port, out.String())
	return r
}
