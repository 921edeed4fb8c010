//go:build linux

package flow

import (
	"fmt"
	"syscall"

	"golang.org/x/sys/unix"
)

// SetCongestion sets a TCP socket's congestion control (TCP_CONGESTION),
// e.g. "cubic", "reno" or "bbr". On a listener, accepted connections
// inherit it.
func SetCongestion(c syscall.Conn, name string) error {
	rc, err := c.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		serr = unix.SetsockoptString(int(fd), unix.IPPROTO_TCP, unix.TCP_CONGESTION, name)
	}); err != nil {
		return err
	}
	if serr != nil {
		return fmt.Errorf("congestion control %q: %w (see /proc/sys/net/ipv4/tcp_available_congestion_control)", name, serr)
	}
	return nil
}
