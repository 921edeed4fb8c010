package check

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/flow/ecnudp"
	"github.com/pi2hop/pi2hop/flow/ecnudp/ecnudptest"
)

// serve starts a responder on addr for the test's life, skipping where the
// system has no ECN socket options or no such family.
func serve(t *testing.T, addr string) netip.AddrPort {
	t.Helper()
	c := ecnudptest.Listen(t, addr)
	r, err := NewResponder(c)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Serve: %v", err)
			}
		case <-time.After(2 * time.Second):
			t.Error("Serve did not return within 2 s of its context's end")
		}
		c.Close()
	})
	return c.LocalAddr().(*net.UDPAddr).AddrPort()
}

// Over loopback nothing touches the field: every probe arrives as sent,
// both ways, over IPv4 and IPv6, with the same TTL each way.
func TestLoopbackPasses(t *testing.T) {
	for _, addr := range []string{"127.0.0.1:0", "[::1]:0"} {
		peer := serve(t, addr)
		opts := DefaultOptions()
		opts.Target, opts.Probes, opts.Interval, opts.Load = peer.String(), 5, time.Millisecond, false
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		r, err := Path(ctx, opts)
		cancel()
		if err != nil {
			t.Fatalf("%s: %v", addr, err)
		}
		if !r.Ready() || r.Why() != "" {
			t.Errorf("%s: not ready: %s", addr, r.Why())
		}
		for _, d := range []struct {
			name string
			d    Direction
		}{{"forward", r.Forward}, {"reverse", r.Reverse}} {
			tb := d.d.Table
			if d.d.Partial {
				t.Errorf("%s %s: partial", addr, d.name)
			}
			for _, s := range order {
				// Probe i asks for its echo in order[(i/4)%4]: 20 probes
				// give every codepoint 5 echoes.
				if tb.Sent[s] != 5 || tb.Arrived[s][s] != 5 || tb.Lost(s) != 0 {
					t.Errorf("%s %s %v: sent %d, arrived as sent %d, lost %d; want 5, 5, 0", addr, d.name, s, tb.Sent[s], tb.Arrived[s][s], tb.Lost(s))
				}
			}
			if tb.TTLMin == 0 || tb.TTLMin != tb.TTLMax {
				t.Errorf("%s %s: TTL %d-%d, want one known value (loopback crosses no router)", addr, d.name, tb.TTLMin, tb.TTLMax)
			}
		}
		if r.Peer != peer {
			t.Errorf("%s: probed %v, want %v", addr, r.Peer, peer)
		}
	}
}

// A closed port answers with ICMP port unreachable: the client says so
// at once, naming the address.
func TestClosedPort(t *testing.T) {
	ecnudptest.Need(t)
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	closed := c.LocalAddr().String()
	c.Close()
	opts := DefaultOptions()
	opts.Target = closed
	start := time.Now()
	_, err = Path(context.Background(), opts)
	var ue *UnreachableError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), closed) || !strings.Contains(err.Error(), "closed") {
		t.Fatalf("Path to a closed port: %v, want an UnreachableError naming %s and saying closed", err, closed)
	}
	if el := time.Since(start); el > 2*time.Second {
		t.Errorf("took %v to see a closed port, want under 2 s", el)
	}
}

// A responder that answers nothing (a socket that only reads) makes the
// client give up after Wait, naming the address.
func TestSilentPeer(t *testing.T) {
	ecnudptest.Need(t)
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	opts := DefaultOptions()
	opts.Target, opts.Wait = c.LocalAddr().String(), 500*time.Millisecond
	start := time.Now()
	_, err = Path(context.Background(), opts)
	var ue *UnreachableError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), c.LocalAddr().String()) || !strings.Contains(err.Error(), "no answer within 500ms") {
		t.Fatalf("Path to a silent socket: %v, want no answer within 500ms naming %v", err, c.LocalAddr())
	}
	if el := time.Since(start); el < 400*time.Millisecond || el > 2*time.Second {
		t.Errorf("gave up after %v, want about 500ms", el)
	}
}

// The responder answers a probe with an echo in the codepoint asked for,
// reporting what the probe arrived with, and answers nothing that is not
// a whole message.
func TestResponderAnswers(t *testing.T) {
	peer := serve(t, "127.0.0.1:0")
	c, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(peer))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := ecnudp.EnableReceive(c); err != nil {
		t.Fatal(err)
	}
	for _, junk := range [][]byte{
		[]byte("hello"),
		appendMsg(nil, msg{typ: typeProbe, session: 5})[:30],
		appendMsg(nil, msg{typ: typeSummaryReq, session: 5})[:ProbeSize],
		appendMsg(nil, msg{typ: typeEcho, session: 5}),
	} {
		if _, err := c.Write(junk); err != nil {
			t.Fatal(err)
		}
	}
	probe := appendMsg(nil, msg{typ: typeProbe, session: 5, seq: 42, sentTOS: ProbeDSCP<<2 | uint8(aqm.ECT1), echoECN: aqm.CE})
	if _, _, err := c.WriteMsgUDP(probe, ecnudp.AppendTOS(nil, peer, ProbeDSCP<<2|uint8(aqm.ECT1)), nil); err != nil {
		t.Fatal(err)
	}
	buf, oob := make([]byte, 512), make([]byte, ecnudp.OOBSize)
	c.SetReadDeadline(time.Now().Add(2 * time.Second))
	n, oobn, _, _, err := c.ReadMsgUDPAddrPort(buf, oob)
	if err != nil {
		t.Fatalf("no echo within 2 s: %v", err)
	}
	m, err := parseMsg(buf[:n])
	if err != nil || m.typ != typeEcho {
		t.Fatalf("first answer %+v, %v: want an echo (the junk before it must get none)", m, err)
	}
	want := msg{typ: typeEcho, session: 5, seq: 42, sentTOS: 0x29, arrivedTOS: 0x29, flags: flagTOS | flagTTL, arrivedTTL: m.arrivedTTL, echoTOS: 0x2b}
	if m != want || m.arrivedTTL == 0 {
		t.Errorf("echo %+v, want %+v with a TTL", m, want)
	}
	if ctl := ecnudp.ParseControl(oob[:oobn]); ctl.TOS != 0x2b {
		t.Errorf("echo arrived with TOS %#x, want 0x2b (AF11, CE as asked)", ctl.TOS)
	}
	if n != ProbeSize {
		t.Errorf("echo of %d bytes to a probe of %d", n, ProbeSize)
	}
}
