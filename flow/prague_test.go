package flow

import (
	"context"
	"net"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/flow/ecnudp"
	"github.com/pi2hop/pi2hop/flow/ecnudp/ecnudptest"
	"github.com/pi2hop/pi2hop/internal/race"
)

func udpPair(t *testing.T, addr string) (a, b *net.UDPConn) {
	t.Helper()
	return ecnudptest.Listen(t, addr), ecnudptest.Listen(t, addr)
}

func addrOf(c *net.UDPConn) netip.AddrPort { return c.LocalAddr().(*net.UDPAddr).AddrPort() }

// sendAndReceive runs recv while send runs, both under a context that ends
// after timeout, and stops recv grace after send returns, time for the
// last report to arrive. It returns what each returned.
func sendAndReceive[S, R any](timeout, grace time.Duration, send func(context.Context) (S, error), recv func(context.Context) (R, error)) (S, R, error, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	rctx, stopRecv := context.WithCancel(ctx)
	var (
		wg   sync.WaitGroup
		rs   R
		rerr error
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		rs, rerr = recv(rctx)
	}()
	ss, err := send(ctx)
	time.Sleep(grace)
	stopRecv()
	wg.Wait()
	return ss, rs, err, rerr
}

// cpuShareJudged reports whether a loopback test judges the figures that
// depend on the CPU time its run got: packets and frames in a wall-clock
// run, reports on time, RTTs. Not under the race detector: make test runs
// it at idle priority beside the timed tests, where a run may get no CPU
// for seconds (a sender there once sent nothing in 1.5 s). The race run
// is for the race detector; the normal build judges these figures.
func cpuShareJudged(t *testing.T) bool {
	t.Helper()
	if race.Enabled {
		t.Log("race detector: figures that depend on the CPU time this run got are not judged")
	}
	return !race.Enabled
}

// A Prague pair over loopback for ~2 s delivers data and reports sane
// intervals on both sides.
func TestPragueLoopback(t *testing.T) {
	for _, tc := range []struct {
		name, addr, ecn string
	}{
		{"l4s v4", "127.0.0.1:0", ECNL4S},
		{"classic v6", "[::1]:0", ECNClassic},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tx, rx := udpPair(t, tc.addr)
			cfg := PragueConfig{ECN: tc.ecn, MaxRate: 20_000_000, Duration: 2 * time.Second, Interval: 250 * time.Millisecond, Label: "t"}
			rcfg := cfg
			rcfg.Duration = 0
			var reports []Interval
			ss, rs, err, rerr := sendAndReceive(10*time.Second, 50*time.Millisecond,
				func(ctx context.Context) (SenderSummary, error) {
					return PragueSend(ctx, tx, addrOf(rx), cfg, func(iv Interval) { reports = append(reports, iv) })
				},
				func(ctx context.Context) (ReceiverSummary, error) { return PragueRecv(ctx, rx, rcfg, nil) })
			if err != nil || rerr != nil {
				t.Fatalf("send: %v, recv: %v", err, rerr)
			}
			t.Logf("sender: %.2f Mbit/s goodput, %d pkts, %d RTT samples, lost %d, CE %d, ECN %s; receiver %.2f Mbit/s, %d pkts",
				ss.GoodputBps/1e6, ss.PacketsSent, len(ss.RTT), ss.Lost, ss.CE, ss.ECN, rs.GoodputBps/1e6, rs.Packets)
			judged := cpuShareJudged(t)
			if judged && (ss.PacketsSent < 100 || rs.Packets < 100 || ss.AckedBytes == 0) {
				t.Errorf("too little traffic: sent %d, received %d, acked %d B", ss.PacketsSent, rs.Packets, ss.AckedBytes)
			}
			if ss.GoodputBps > 21e6 {
				t.Errorf("goodput %.1f Mbit/s above the 20 Mbit/s cap", ss.GoodputBps/1e6)
			}
			if (judged && len(ss.RTT) == 0) || len(ss.RTT) != len(ss.RTTAt) {
				t.Fatalf("RTT samples %d, times %d", len(ss.RTT), len(ss.RTTAt))
			}
			for i, r := range ss.RTT {
				if r <= 0 || judged && r > 200*time.Millisecond {
					t.Fatalf("RTT sample %d = %v on loopback", i, r)
				}
			}
			if n := len(reports); judged && (n < 7 || n > 10) {
				t.Errorf("%d reports in 2 s at 250 ms", n)
			}
			for _, iv := range reports {
				if iv.Flow != "prague-send" || iv.Label != "t" || iv.Dur <= 0 || iv.T <= 0 || judged && (iv.Dur > 0.5 || iv.T > 2.1) {
					t.Errorf("bad interval %+v", iv)
				}
			}
			wantECN := "ECT(1)"
			if tc.ecn == ECNClassic {
				wantECN = "Not-ECT"
				if rs.ECT1 != 0 || rs.NotECT != rs.Packets {
					t.Errorf("classic flow arrived with ECT(1) %d, Not-ECT %d of %d", rs.ECT1, rs.NotECT, rs.Packets)
				}
			} else if rs.ECT1+rs.CE != rs.Packets || rs.ErrorL4S {
				t.Errorf("L4S flow arrived with ECT(1) %d, CE %d of %d, error_L4S %v", rs.ECT1, rs.CE, rs.Packets, rs.ErrorL4S)
			}
			if ss.ECN != wantECN {
				t.Errorf("sender ECN %s, want %s", ss.ECN, wantECN)
			}
			if judged && (ss.LossFraction > 0.01 || rs.LossFraction > 0.01) {
				t.Errorf("loss on loopback: sender %.3f, receiver %.3f", ss.LossFraction, rs.LossFraction)
			}
		})
	}
}

// relay forwards datagrams between a sender (on front) and a receiver (at
// to, through back), rewriting the ECN field of every data packet to
// codepoint e (its socket's) and dropping every dropEvery-th data packet
// (0: none).
func relay(ctx context.Context, front, back *net.UDPConn, to netip.AddrPort, e aqm.ECN, dropEvery int) {
	ecnudp.SetECN(back, e)
	var sender netip.AddrPort
	var mu sync.Mutex
	go func() {
		buf := make([]byte, 2048)
		for n := 1; ; n++ {
			k, from, err := front.ReadFromUDPAddrPort(buf)
			if err != nil {
				return
			}
			mu.Lock()
			sender = from
			mu.Unlock()
			if dropEvery > 0 && n%dropEvery == 0 {
				continue
			}
			back.WriteToUDPAddrPort(buf[:k], to)
		}
	}()
	buf := make([]byte, 2048)
	for ctx.Err() == nil {
		k, _, err := back.ReadFromUDPAddrPort(buf)
		if err != nil {
			return
		}
		mu.Lock()
		s := sender
		mu.Unlock()
		front.WriteToUDPAddrPort(buf[:k], s)
	}
}

// Through a path that rewrites every packet's ECN field, the sender's
// validation fails with the reason RFC 9000 §13.4.2 gives at the first
// ACK (bleached: counted nowhere; re-marked: ECT(0) counted, none sent) or
// once the 10 test packets are ACKed (mangled: all CE), and the sender
// falls back to Not-ECT for good; the receiver's own figure, error_L4S,
// is set for every rewrite but CE. With --no-ecn-validation the sender
// keeps ECT(1) through the bleaching. The bleaching path also loses 1
// packet in 50, which both ends count.
func TestPragueFaultyPath(t *testing.T) {
	for _, tc := range []struct {
		name      string
		path      aqm.ECN
		noVal     bool
		dropEvery int
		reason    string
	}{
		{"bleached, lossy", aqm.NotECT, false, 50, "bleached"},
		{"re-marked ECT(0)", aqm.ECT0, false, 0, "re-marked"},
		{"mangled CE", aqm.CE, false, 0, "mangled"},
		{"bleached, no validation", aqm.NotECT, true, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tx, rx := udpPair(t, "127.0.0.1:0")
			front, back := udpPair(t, "127.0.0.1:0")
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			go relay(ctx, front, back, addrOf(rx), tc.path, tc.dropEvery)
			defer front.Close()
			defer back.Close()
			var wg sync.WaitGroup
			var rs ReceiverSummary
			rctx, stopRecv := context.WithCancel(ctx)
			wg.Add(1)
			go func() {
				defer wg.Done()
				rs, _ = PragueRecv(rctx, rx, PragueConfig{}, nil)
			}()
			ss, err := PragueSend(ctx, tx, addrOf(front), PragueConfig{MaxRate: 10_000_000, Duration: 1500 * time.Millisecond,
				NoECNValidation: tc.noVal}, nil)
			time.Sleep(50 * time.Millisecond)
			stopRecv()
			wg.Wait()
			if err != nil {
				t.Fatal(err)
			}
			v := ss.Validation
			t.Logf("sender: %d sent, lost %d (%.3f), ECN %s, validation %s %q at %v; receiver: Not-ECT %d, ECT(0) %d, CE %d of %d, lost %d",
				ss.PacketsSent, ss.Lost, ss.LossFraction, ss.ECN, v.State, v.Failed, v.At, rs.NotECT, rs.ECT0, rs.CE, rs.Packets, rs.Lost)
			if !cpuShareJudged(t) {
				// A run starved of CPU may end before the test period: a
				// failure it reached must still name the fault.
				if v.State == "failed" && v.Failed != tc.reason {
					t.Errorf("sender: validation failed %q, want %q", v.Failed, tc.reason)
				}
				return
			}
			if rs.ErrorL4S != (tc.path != aqm.CE) {
				t.Errorf("receiver: error_L4S %v, want %v", rs.ErrorL4S, tc.path != aqm.CE)
			}
			if tc.noVal {
				if ss.FellBack || ss.ECN != "ECT(1)" || v.State != "off" {
					t.Errorf("sender without validation: fell back %v, ECN %s, validation %s; want ECT(1) throughout, off", ss.FellBack, ss.ECN, v.State)
				}
			} else {
				if !ss.FellBack || ss.ECN != "Not-ECT" || v.State != "failed" || v.Failed != tc.reason {
					t.Errorf("sender: fell back %v, ECN %s, validation %s %q; want a fallback to Not-ECT, failed %q", ss.FellBack, ss.ECN, v.State, v.Failed, tc.reason)
				}
				// At the first ACK, or the 10th: the first packets leave
				// 12 ms apart at 100 kbit/s, so 0.15 s on loopback; 1 s
				// allows for a busy machine's stalls.
				if v.At <= 0 || v.At > time.Second {
					t.Errorf("sender: failed at %v, want within the test period (1 s)", v.At)
				}
			}
			if tc.dropEvery > 0 {
				if f := ss.LossFraction; f < 0.01 || f > 0.03 {
					t.Errorf("sender loss %.3f, want about 1/50", f)
				}
				if rs.Lost < ss.Lost-1 || rs.Lost > ss.Lost+1 {
					t.Errorf("receiver lost %d, sender's last ACK says %d", rs.Lost, ss.Lost)
				}
			}
		})
	}
}
