//go:build !linux

package testbed

import (
	"errors"
	"net"
	"syscall"
)

// The lab needs Linux (network namespaces, TUN devices, TCP_WINDOW_CLAMP);
// these stand-ins keep the package building elsewhere, so its unit tests
// and the report code run on any machine.

var errNotLinux = errors.New("testbed: the lab's TCP flows need Linux")

func tcpSenderControl(uint64) func(network, address string, c syscall.RawConn) error {
	return func(string, string, syscall.RawConn) error { return errNotLinux }
}

func tcpReceiverControl(uint64) func(network, address string, c syscall.RawConn) error {
	return func(string, string, syscall.RawConn) error { return errNotLinux }
}

func newClampConn(c *net.TCPConn, _ uint64) net.Conn { return c }
