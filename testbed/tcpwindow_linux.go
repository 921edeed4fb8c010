package testbed

import (
	"errors"
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// Kernel TCP for the lab's classic flows. The congestion control is set
// per socket: this kernel's default is bbr (which ignores CE and would only
// respond to drops), and a network namespace may not make cubic its
// default (EPERM: only init_net can pick a restricted algorithm), but a
// socket of a privileged process may. Accepted sockets keep the listener's.
const classicCC = "cubic"

// tcpSenderControl makes a listener's sockets cubic and, for a window w > 0,
// gives them a send buffer that never limits a w-byte window.
func tcpSenderControl(w uint64) func(network, address string, c syscall.RawConn) error {
	return func(network, address string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) {
			serr = unix.SetsockoptString(int(fd), unix.IPPROTO_TCP, unix.TCP_CONGESTION, classicCC)
			if serr == nil && w > 0 {
				serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_SNDBUFFORCE, int(min(4*w, 1<<30)))
			}
		})
		return errors.Join(err, serr)
	}
}

// tcpReceiverControl makes a client socket cubic and, for w > 0, sizes
// its receive side for a w-byte window before connect: SO_RCVBUFFORCE of
// 2·w (the kernel counts about half a buffer as window) and
// TCP_WINDOW_CLAMP w, which also sets the window scale the SYN offers.
func tcpReceiverControl(w uint64) func(network, address string, c syscall.RawConn) error {
	return func(network, address string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) {
			serr = unix.SetsockoptString(int(fd), unix.IPPROTO_TCP, unix.TCP_CONGESTION, classicCC)
			if serr == nil && w > 0 {
				serr = errors.Join(
					unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, int(min(2*w, 1<<30))),
					setClamp(fd, w))
			}
		})
		return errors.Join(err, serr)
	}
}

func setClamp(fd uintptr, w uint64) error {
	return unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_WINDOW_CLAMP, int(w))
}

// clampConn re-applies TCP_WINDOW_CLAMP after every read. Linux (6.x)
// resets the clamp from the receive buffer whenever an arriving segment
// changes its payload/truesize estimate (tcp_measure_rcv_mss), so a clamp
// set before connect alone lets the window grow past w. A setsockopt per
// read costs far less than the read.
//
// It embeds net.Conn, not *net.TCPConn, on purpose: TCPConn's WriteTo
// would let io.Copy read around Read and so around the clamp.
type clampConn struct {
	net.Conn
	raw syscall.RawConn
	w   uint64
}

func newClampConn(c *net.TCPConn, w uint64) net.Conn {
	raw, err := c.SyscallConn()
	if err != nil {
		return c
	}
	return &clampConn{Conn: c, raw: raw, w: w}
}

func (c *clampConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if n > 0 {
		c.raw.Control(func(fd uintptr) { setClamp(fd, c.w) })
	}
	return n, err
}
