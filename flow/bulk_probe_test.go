package flow

import (
	"context"
	"encoding/binary"
	"net"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/flow/ecnudp"
	"github.com/pi2hop/pi2hop/flow/wire"
)

// loopbackListener is a TCP listener on loopback, closed when t ends; it
// skips t off Linux, where the bulk server cannot set TCP_CONGESTION.
func loopbackListener(t *testing.T) *net.TCPListener {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("TCP_CONGESTION is Linux only")
	}
	ln, err := net.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln
}

func TestBulkLoopback(t *testing.T) {
	ln := loopbackListener(t)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var serr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		serr = BulkServe(ctx, ln)
	}()
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	var reports int
	s, err := BulkFetch(context.Background(), conn, 1100*time.Millisecond, func(Interval) { reports++ })
	cancel()
	wg.Wait()
	if err != nil || serr != nil {
		t.Fatalf("fetch: %v, serve: %v", err, serr)
	}
	t.Logf("bulk: %d bytes in %v, %.0f Mbit/s, per second %v", s.Bytes, s.Duration, s.GoodputBps/1e6, s.PerSecond)
	if s.Bytes < 1<<20 || s.GoodputBps <= 0 || len(s.PerSecond) != 1 || reports < 1 || reports > 2 {
		t.Errorf("bytes %d, goodput %.0f, per second %v, %d reports", s.Bytes, s.GoodputBps, s.PerSecond, reports)
	}
	if d := s.Duration; d < time.Second || d > 1200*time.Millisecond {
		t.Errorf("duration %v, want 1.1 s", d)
	}
}

func TestSetCongestionErrors(t *testing.T) {
	ln := loopbackListener(t)
	if err := SetCongestion(ln, "cubic"); err != nil {
		t.Errorf("cubic: %v", err)
	}
	if err := SetCongestion(ln, "no-such-cc"); err == nil {
		t.Error("an unknown congestion control was accepted")
	}
}

func TestProbeLoopback(t *testing.T) {
	for _, ecn := range []aqm.ECN{aqm.ECT1, aqm.NotECT} {
		cli, srv := udpPair(t, "127.0.0.1:0")
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		var serr error
		wg.Add(1)
		go func() {
			defer wg.Done()
			serr = ProbeServe(ctx, srv)
		}()
		s, err := Probe(context.Background(), cli, addrOf(srv), ecn, 10*time.Millisecond, 300*time.Millisecond, nil)
		cancel()
		wg.Wait()
		if err != nil || serr != nil {
			t.Fatalf("%v: probe: %v, serve: %v", ecn, err, serr)
		}
		if s.Sent < 10 || s.Sent > 31 || s.Received != s.Sent || s.Lost != 0 || len(s.RTT) != s.Received || len(s.RTTAt) != s.Received {
			t.Errorf("%v: sent %d, received %d, lost %d, %d samples", ecn, s.Sent, s.Received, s.Lost, len(s.RTT))
		}
		for _, r := range s.RTT {
			if r <= 0 || r > time.Second { // loopback; generous for a loaded CI machine
				t.Errorf("%v: RTT %v on loopback", ecn, r)
				break
			}
		}
		if s.ECN != ecn.String() || s.ForwardCE != 0 || s.ReturnCE != 0 || len(s.Intervals) == 0 {
			t.Errorf("%v: summary %+v", ecn, s)
		}
	}
}

// The probe server replies with the codepoint the request asked for and
// reports the one it arrived with.
func TestProbeServeReflectsECN(t *testing.T) {
	cli, srv := udpPair(t, "127.0.0.1:0")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go ProbeServe(ctx, srv)
	if err := ecnudp.EnableReceive(cli); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ sendWith, replyWith aqm.ECN }{{aqm.ECT1, aqm.ECT1}, {aqm.CE, aqm.NotECT}, {aqm.NotECT, aqm.ECT0}} {
		req := make([]byte, probeSize)
		req[0], req[1] = probeRequest, byte(tc.replyWith)
		binary.BigEndian.PutUint32(req[2:], 7)
		if _, _, err := cli.WriteMsgUDPAddrPort(req, ecnudp.AppendCmsg(nil, addrOf(srv), tc.sendWith), addrOf(srv)); err != nil {
			t.Fatal(err)
		}
		buf, oob := make([]byte, 128), make([]byte, ecnudp.OOBSize)
		cli.SetReadDeadline(time.Now().Add(2 * time.Second))
		n, oobn, _, _, err := cli.ReadMsgUDPAddrPort(buf, oob)
		if err != nil {
			t.Fatal(err)
		}
		back, _ := ecnudp.ParseECN(oob[:oobn])
		if n <= probeHeader || buf[0] != probeReply || aqm.ECN(buf[probeHeader]) != tc.sendWith || back != tc.replyWith {
			t.Errorf("request %v asking for %v: reply % x arrived %v", tc.sendWith, tc.replyWith, buf[:probeHeader+1], back)
		}
	}
}

// In L4S mode a receiver's ACKs follow the data's ECN capability: ECT(1)
// for data that came ECT(1), CE or ECT(0), Not-ECT for data that came
// Not-ECT (so that through a path that drops ECT packets both ways, the
// ACKs of the sender's Not-ECT packets get back); in classic mode always
// Not-ECT.
func TestACKsFollowTheData(t *testing.T) {
	for _, tc := range []struct {
		classic bool
		data    []aqm.ECN
		want    []aqm.ECN
	}{
		{false, []aqm.ECN{aqm.ECT1, aqm.NotECT, aqm.CE, aqm.NotECT, aqm.ECT0}, []aqm.ECN{aqm.ECT1, aqm.NotECT, aqm.ECT1, aqm.NotECT, aqm.ECT1}},
		{true, []aqm.ECN{aqm.NotECT, aqm.ECT1}, []aqm.ECN{aqm.NotECT, aqm.NotECT}},
	} {
		cli, srv := udpPair(t, "127.0.0.1:0")
		if err := setFeedbackECN(srv, tc.classic); err != nil {
			t.Fatal(err)
		}
		if err := ecnudp.EnableReceive(cli); err != nil {
			t.Fatal(err)
		}
		a := newAcker(srv, "test", false, 0, 1400, tc.classic)
		for i, e := range tc.data {
			if err := a.send(0, 0, addrOf(cli), int32(i+1), e, wire.ACK{}); err != nil {
				t.Fatal(err)
			}
			buf, oob := make([]byte, 128), make([]byte, ecnudp.OOBSize)
			cli.SetReadDeadline(time.Now().Add(2 * time.Second))
			_, oobn, _, _, err := cli.ReadMsgUDPAddrPort(buf, oob)
			if err != nil {
				t.Fatalf("waiting 2 s for the ACK of data that came %v: %v", e, err)
			}
			if got, _ := ecnudp.ParseECN(oob[:oobn]); got != tc.want[i] {
				t.Errorf("classic %v: ACK of data that came %v arrived %v, want %v", tc.classic, e, got, tc.want[i])
			}
		}
	}
}
