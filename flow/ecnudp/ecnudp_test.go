package ecnudp

import (
	"errors"
	"net"
	"net/netip"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/pi2hop/pi2hop/aqm"
)

// listen opens a UDP socket on a loopback address, skipping if the
// family is not available.
func listen(t *testing.T, addr string) *net.UDPConn {
	t.Helper()
	if !Supported {
		t.Skip("no ECN socket options on " + runtime.GOOS)
	}
	c, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.MustParseAddrPort(addr)))
	if err != nil {
		t.Skipf("no %s: %v", addr, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// Every codepoint set on the sending socket arrives as sent, over IPv4 and
// IPv6 loopback, both with the socket option and with a per-packet cmsg.
func TestLoopbackCodepoints(t *testing.T) {
	for _, addr := range []string{"127.0.0.1:0", "[::1]:0"} {
		tx, rx := listen(t, addr), listen(t, addr)
		if err := EnableReceive(rx); err != nil {
			t.Fatal(err)
		}
		to := rx.LocalAddr().(*net.UDPAddr).AddrPort()
		for _, e := range []aqm.ECN{aqm.NotECT, aqm.ECT1, aqm.ECT0, aqm.CE} {
			if err := SetECN(tx, e); err != nil {
				t.Fatal(err)
			}
			if _, err := tx.WriteToUDPAddrPort([]byte("sockopt"), to); err != nil {
				t.Fatal(err)
			}
			if got := readECN(t, rx); got != e {
				t.Errorf("%s socket option %v: received %v", addr, e, got)
			}
		}
		if err := SetECN(tx, aqm.NotECT); err != nil {
			t.Fatal(err)
		}
		for _, e := range []aqm.ECN{aqm.ECT1, aqm.CE} {
			if _, _, err := tx.WriteMsgUDPAddrPort([]byte("cmsg"), AppendCmsg(nil, to, e), to); err != nil {
				t.Fatal(err)
			}
			if got := readECN(t, rx); got != e {
				t.Errorf("%s cmsg %v: received %v", addr, e, got)
			}
		}
	}
}

func readECN(t *testing.T, rx *net.UDPConn) aqm.ECN {
	t.Helper()
	buf, oob := make([]byte, 64), make([]byte, OOBSize)
	rx.SetReadDeadline(time.Now().Add(2 * time.Second))
	_, oobn, _, _, err := rx.ReadMsgUDPAddrPort(buf, oob)
	if err != nil {
		t.Fatal(err)
	}
	e, ok := ParseECN(oob[:oobn])
	if !ok {
		t.Fatalf("no ECN control message in % x", oob[:oobn])
	}
	return e
}

func TestParseECNIgnoresGarbage(t *testing.T) {
	for _, oob := range [][]byte{nil, {1, 2, 3}, make([]byte, 16), {0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}} {
		if _, ok := ParseECN(oob); ok {
			t.Errorf("ParseECN(% x) found a codepoint", oob)
		}
	}
}

func TestWaiter(t *testing.T) {
	rx := listen(t, "127.0.0.1:0")
	w := NewWaiter(rx)
	start := time.Now()
	readable, err := w.Wait(2 * time.Millisecond)
	if err != nil || readable {
		t.Fatalf("Wait on an idle socket = %v, %v", readable, err)
	}
	if el := time.Since(start); el < 1900*time.Microsecond || el > 50*time.Millisecond {
		t.Errorf("Wait(2ms) took %v", el)
	}
	tx := listen(t, "127.0.0.1:0")
	if _, err := tx.WriteToUDPAddrPort([]byte("x"), rx.LocalAddr().(*net.UDPAddr).AddrPort()); err != nil {
		t.Fatal(err)
	}
	if readable, err := w.Wait(time.Second); err != nil || !readable {
		t.Errorf("Wait with a datagram queued = %v, %v", readable, err)
	}
	rx.Close()
	if _, err := w.Wait(time.Millisecond); !errors.Is(err, net.ErrClosed) && !errors.Is(err, os.ErrClosed) {
		t.Errorf("Wait after Close: %v, want a closed error", err)
	}
}

// TestReceiveTime: after EnableReceive every datagram carries the time the
// kernel received it, between its sending and its reading, also when it
// is read much later (the reader's wake-up is what the stamp leaves out),
// beside its ECN field, over IPv4 and IPv6.
func TestReceiveTime(t *testing.T) {
	for _, addr := range []string{"127.0.0.1:0", "[::1]:0"} {
		tx, rx := listen(t, addr), listen(t, addr)
		if err := EnableReceive(rx); err != nil {
			t.Fatal(err)
		}
		if err := SetECN(tx, aqm.ECT1); err != nil {
			t.Fatal(err)
		}
		before := time.Now().UnixNano()
		if _, err := tx.WriteToUDPAddrPort([]byte("stamp"), rx.LocalAddr().(*net.UDPAddr).AddrPort()); err != nil {
			t.Fatal(err)
		}
		sent := time.Now().UnixNano()
		time.Sleep(20 * time.Millisecond) // held in the socket before the read
		buf, oob := make([]byte, 64), make([]byte, OOBSize)
		rx.SetReadDeadline(time.Now().Add(2 * time.Second))
		_, oobn, _, _, err := rx.ReadMsgUDPAddrPort(buf, oob)
		if err != nil {
			t.Fatal(err)
		}
		c := ParseControl(oob[:oobn])
		if !c.HasECN || c.ECN != aqm.ECT1 {
			t.Errorf("%s: ECN %v (attached %v), want ECT(1)", addr, c.ECN, c.HasECN)
		}
		// Loopback delivers within the sending call, so the stamp lies
		// between the clock readings around it; the 20 ms in the socket
		// are not in it. The BSDs stamp in µs, truncated.
		if c.Arrival < before-before%1000 || c.Arrival > sent {
			t.Errorf("%s: kernel receive time %d ns, want within the send call [%d, %d]", addr, c.Arrival, before, sent)
		}
	}
}

// TestTOSAndTTL: a per-packet TOS byte with DSCP bits arrives whole (the
// DSCP kept beside the ECN field), and after EnableTTL each datagram
// carries the TTL or hop limit the sender set (loopback crosses no router).
func TestTOSAndTTL(t *testing.T) {
	for _, addr := range []string{"127.0.0.1:0", "[::1]:0"} {
		tx, rx := listen(t, addr), listen(t, addr)
		if err := EnableReceive(rx); err != nil {
			t.Fatal(err)
		}
		if err := EnableTTL(rx); err != nil {
			t.Fatal(err)
		}
		to := rx.LocalAddr().(*net.UDPAddr).AddrPort()
		setTTL(t, tx, to.Addr().Is6(), 33)
		for _, tos := range []uint8{0x29, 0xb8 | 3, 0} {
			if _, _, err := tx.WriteMsgUDPAddrPort([]byte("tos"), AppendTOS(nil, to, tos), to); err != nil {
				t.Fatal(err)
			}
			buf, oob := make([]byte, 64), make([]byte, OOBSize)
			rx.SetReadDeadline(time.Now().Add(2 * time.Second))
			_, oobn, _, _, err := rx.ReadMsgUDPAddrPort(buf, oob)
			if err != nil {
				t.Fatal(err)
			}
			c := ParseControl(oob[:oobn])
			if !c.HasECN || c.TOS != tos || c.ECN != aqm.ECN(tos&3) {
				t.Errorf("%s: sent TOS %#x, received %#x (ECN %v, attached %v)", addr, tos, c.TOS, c.ECN, c.HasECN)
			}
			if !c.HasTTL || c.TTL != 33 {
				t.Errorf("%s: sent with TTL 33, received %d (attached %v)", addr, c.TTL, c.HasTTL)
			}
		}
	}
}
