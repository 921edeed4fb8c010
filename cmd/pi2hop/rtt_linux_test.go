package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pi2hop/pi2hop/netsys"
	"golang.org/x/sys/unix"
)

// Passive RTT through shell --delay 10ms (20 ms base): a bulk TCP flow's
// round trip as the hop times it (the sum of its halves) against the
// sender's own smoothed RTT (tcpi_rtt, what ss -ti shows) read during
// the run: medians within 2 ms or 10 %, whichever is larger, and a p99
// of 20 ms or more. Then the same without TCP timestamps in the shell's
// namespace: the flow is timed by sequence and ACK numbers. And a
// QUIC-like UDP flow (a long header, then short headers with a constant
// spin bit both ways) is said not to spin. analyze of the run's capture
// times the timestamped flow as the hop did: medians within 0.5 ms.
func TestShellPassiveRTT(t *testing.T) {
	needRoot(t, "bash")
	t.Parallel()
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
		ln := listenTCPIn(t, inShell, addr)
		port := uint16(ln.Addr().(*net.TCPAddr).Port)
		go func() {
			if c, err := ln.AcceptTCP(); err == nil {
				io.Copy(io.Discard, c)
				c.Close()
			}
		}()
		srtt := bulkTCP(t, ln.Addr().(*net.TCPAddr), 3*time.Second)
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
			// Both medians are histogram buckets' middles (rtt.Hist: 1.6 %
			// wide): the capture holds the flow to its end, later than the
			// hop's figure was read, and a loaded capture may miss records
			// (capture_dropped), so one sample more or less may put either
			// in the next bucket: 0.5 ms and one bucket.
			if d, b := f.Sum.P50Ms-tsFlow.p50, 0.5+0.016*tsFlow.p50; d > b || d < -b {
				t.Errorf("analyze's RTT median %.2f ms, the hop's %.2f ms: want within %.2f ms (0.5 ms and a bucket)", f.Sum.P50Ms, tsFlow.p50, b)
			}
		}
	}
	if !found {
		t.Errorf("analyze times no TCP flow of port %d: %+v", tsFlow.port, res.RTT.Flows)
	}
}

// bulkTCP sends to addr from the host for d and returns the median of
// the sender's smoothed RTT (tcpi_rtt, ms), read every 20 ms.
func bulkTCP(t *testing.T, addr *net.TCPAddr, d time.Duration) float64 {
	t.Helper()
	c, err := net.DialTCP("tcp", nil, addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	raw, err := c.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var srtt []float64
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 64<<10)
		for end := time.Now().Add(d); time.Now().Before(end); {
			if _, err := c.Write(buf); err != nil {
				return
			}
		}
	}()
	for tick := time.NewTicker(20 * time.Millisecond); ; {
		select {
		case <-done:
			tick.Stop()
			if len(srtt) == 0 {
				t.Fatal("no tcpi_rtt read during the transfer")
			}
			slices.Sort(srtt)
			return srtt[len(srtt)/2]
		case <-tick.C:
			raw.Control(func(fd uintptr) {
				if info, err := unix.GetsockoptTCPInfo(int(fd), unix.SOL_TCP, unix.TCP_INFO); err == nil && info.Rtt > 0 {
					srtt = append(srtt, float64(info.Rtt)/1e3)
				}
			})
		}
	}
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
