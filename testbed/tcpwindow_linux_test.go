package testbed

import (
	"io"
	"net"
	"syscall"
	"testing"

	"github.com/pi2hop/pi2hop/internal/roottest"
	"golang.org/x/sys/unix"
)

func sockopt(t *testing.T, c *net.TCPConn, f func(fd int)) {
	t.Helper()
	raw, err := c.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	if err := raw.Control(func(fd uintptr) { f(int(fd)) }); err != nil {
		t.Fatal(err)
	}
}

// TestPinnedWindow checks, over loopback, that the bdp flows' sockets are
// cubic and that the receiver's window clamp is still w after data has
// arrived (the kernel resets it from the buffer size on the first
// segments; clampConn puts it back).
func TestPinnedWindow(t *testing.T) {
	roottest.Need(t) // SO_RCVBUFFORCE and SO_SNDBUFFORCE need CAP_NET_ADMIN
	const w = 17520
	lc := net.ListenConfig{Control: tcpSenderControl(w)}
	ln, err := lc.Listen(t.Context(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		c.Write(make([]byte, 1<<20))
	}()
	// Loopback's 64 KB MSS is more than the window: give it Ethernet's,
	// or the sender waits on the persist timer between windows.
	recv := tcpReceiverControl(w)
	d := net.Dialer{Control: func(network, address string, c syscall.RawConn) error {
		c.Control(func(fd uintptr) { unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_MAXSEG, 1448) })
		return recv(network, address, c)
	}}
	conn, err := d.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	tcp := conn.(*net.TCPConn)
	c := newClampConn(tcp, w)
	defer c.Close()
	if n, err := io.Copy(io.Discard, c); err != nil || n != 1<<20 {
		t.Fatalf("read %d bytes, %v", n, err)
	}
	sockopt(t, tcp, func(fd int) {
		clamp, err := unix.GetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_WINDOW_CLAMP)
		if err != nil || clamp != w {
			t.Errorf("window clamp after the transfer %d (%v), want %d", clamp, err, w)
		}
		cc, err := unix.GetsockoptString(fd, unix.IPPROTO_TCP, unix.TCP_CONGESTION)
		if err != nil || cc != classicCC {
			t.Errorf("congestion control %q (%v), want %s", cc, err, classicCC)
		}
	})
}
