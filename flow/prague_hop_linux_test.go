package flow

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/hop"
	"github.com/pi2hop/pi2hop/internal/hoststeal"
	"github.com/pi2hop/pi2hop/internal/roottest"
	"github.com/pi2hop/pi2hop/shaper"
	"github.com/pi2hop/pi2hop/topology"
)

// hopPair starts a hop at bps with delay each way (kernel-default DualPI2)
// between two fresh namespaces, removed when the test ends.
func hopPair(t *testing.T, bps uint64, delay time.Duration) *topology.Pair {
	t.Helper()
	return hopPairNamed(t, "p2f", bps, delay)
}

// hopPairNamed is hopPair with namespaces and devices named from tag (3
// characters), one per test that may run beside another.
func hopPairNamed(t *testing.T, tag string, bps uint64, delay time.Duration) *topology.Pair {
	t.Helper()
	roottest.Need(t)
	d := hop.DirConfig{Link: shaper.Config{Rate: shaper.Const{BitsPerSecond: bps}, Delay: int64(delay)},
		Queue: aqm.Spec{Kind: aqm.KindDualPI2, DualPI2: aqm.DefaultConfig()}}
	prefix := fmt.Sprintf("%s%d", tag, os.Getpid()%10000)
	p, err := topology.NewPair(context.Background(), prefix, hop.Config{Name: prefix, Up: d, Down: d, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Errorf("close pair: %v", err)
		}
	})
	return p
}

// listenIn opens a UDP socket on addr in a namespace of p (in is
// p.InClient or p.InServer); the socket stays in that namespace.
func listenIn(t *testing.T, in func(func() error) error, addr netip.Addr) *net.UDPConn {
	t.Helper()
	var c *net.UDPConn
	if err := in(func() (err error) {
		c, err = net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.AddrPortFrom(addr, 0)))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// Through the hop at 10 Mbit/s and a 20 ms RTT, client to server, a flow
// with type-18 block feedback gets about the goodput of one with type-17
// ACKs. The feedback travels on the other direction's link, which only it
// uses, so one direction of data crosses both of the hop's owners; the
// same flows the other way round would repeat the same code.
//
// Block feedback costs the law itself some goodput, as it would
// udp_prague's; our block accounting does not (a block frees the window
// of every packet it reports, TestBlockFreesWindow, and the sender makes
// one ACK step per block, as udp_prague's). Package prague's virtual-time
// model (TestBlockFeedbackCost) puts that cost at about 7 %: marks are
// heard half a period later on average, and the window must be widened by
// the period, so it no longer brakes the flow between marks; with
// udp_prague's window, which leaves the period out, the block flow gets
// little more than half the goodput. Live, the ratio comes out above the
// model's, because the per-packet flow is window-limited part of the time
// on a busy machine and the block flow, with its wider window, is not
// (docs/performance.md).
//
// The runs go one after another, 8 s each, goodput taken from 2.5 s on
// (the ramp from 100 kbit/s to the link rate takes about a second at 17.9
// Mbit/s per second of additive growth); a 100 ms stall of the machine in
// one of the two 5.5 s windows moves the ratio by 2 %, so it is held to
// 0.90..1.05, and the host's steal in each window (internal/hoststeal,
// summed over the CPUs, so a stall of both counts twice, towards the hop)
// widens the bounds by the share of goodput that stall could take from
// that run, one for one, as the TCP rate tests in package hop do. A
// sender told the wrong format says so within 4 s.
func TestFeedbackThroughHop(t *testing.T) {
	p := hopPair(t, 10_000_000, 10*time.Millisecond)
	for _, dir := range []struct {
		name     string
		from, to func(func() error) error
		toAddr   netip.Addr
		fromAddr netip.Addr
	}{
		{"up", p.InClient, p.InServer, p.ServerAddr, p.ClientAddr},
	} {
		var goodput, stolen [2]float64
		for i, block := range []bool{false, true} {
			tx, rx := listenIn(t, dir.from, dir.fromAddr), listenIn(t, dir.to, dir.toAddr)
			cfg := PragueConfig{Duration: 8 * time.Second, Interval: 500 * time.Millisecond, RFC8888: block}
			rcfg := cfg
			rcfg.Duration = 0
			steal0 := make(chan time.Duration, 1)
			timer := time.AfterFunc(2900*time.Millisecond, func() { steal0 <- hoststeal.Total() })
			ss, rs, err, rerr := runPairOn(tx, rx, cfg, rcfg)
			timer.Stop()
			steal := time.Duration(-1)
			select {
			case s0 := <-steal0:
				if s1 := hoststeal.Total(); s0 >= 0 && s1 >= 0 {
					steal = s1 - s0
				}
			default: // the run ended before 2.9 s: it failed below
			}
			if err != nil || rerr != nil {
				t.Fatalf("%s, rfc8888 %v: send: %v, recv: %v", dir.name, block, err, rerr)
			}
			var secs float64
			goodput[i], secs = goodputIn(rs.Intervals, 2.9, 8.01)
			if secs < 4.5 {
				t.Fatalf("%s, rfc8888 %v: %.2f s of receiver intervals in 2.5..8 s: %+v", dir.name, block, secs, rs.Intervals)
			}
			if steal > 0 {
				stolen[i] = min(steal.Seconds()/secs, 0.5)
			}
			t.Logf("%s, rfc8888 %v: %.2f Mbit/s from 2.5 to 8 s, host steal %v; sender: %d sent, %d received, %d lost, %d timeouts, RTT samples %d",
				dir.name, block, goodput[i]/1e6, steal, ss.PacketsSent, ss.Received, ss.Lost, ss.Timeouts, len(ss.RTT))
		}
		r := goodput[1] / goodput[0]
		lo, hi := 0.90*(1-stolen[1]), 1.05/(1-stolen[0])
		t.Logf("%s: block / per-packet goodput %.3f (bounds %.3f..%.3f)", dir.name, r, lo, hi)
		if r < lo || r > hi {
			t.Errorf("%s: goodput with block feedback %.2f Mbit/s, with per-packet ACKs %.2f (ratio %.3f); want %.3f..%.3f (0.90..1.05 less host steal)",
				dir.name, goodput[1]/1e6, goodput[0]/1e6, r, lo, hi)
		}
	}
	for _, tc := range []struct {
		send, recv bool
		want       string
	}{
		{false, true, "receiver sends type-18 block feedback: run with --rfc8888"},
		{true, false, "receiver sends type-17 per-packet ACKs: run without --rfc8888"},
	} {
		tx, rx := listenIn(t, p.InClient, p.ClientAddr), listenIn(t, p.InServer, p.ServerAddr)
		start := time.Now()
		_, _, err, rerr := runPairOn(tx, rx, PragueConfig{Duration: 10 * time.Second, RFC8888: tc.send}, PragueConfig{RFC8888: tc.recv})
		took := time.Since(start)
		if rerr != nil {
			t.Errorf("receiver rfc8888=%v: %v", tc.recv, rerr)
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("sender rfc8888=%v, receiver rfc8888=%v: err %v; want %q", tc.send, tc.recv, err, tc.want)
		}
		if took > 4*time.Second {
			t.Errorf("sender rfc8888=%v: took %v to stop, want < 4 s", tc.send, took)
		}
		t.Logf("%v after %v", err, took.Round(time.Millisecond))
	}
}
