// Package ecnudptest gives tests the UDP sockets that carry ECN, and skips
// a test where package ecnudp cannot set or read the ECN field (the one
// statement of which systems can is ecnudp.Supported).
package ecnudptest

import (
	"net"
	"net/netip"
	"runtime"
	"testing"

	"github.com/pi2hop/pi2hop/flow/ecnudp"
)

// Need skips t on a system without ECN socket options.
func Need(t testing.TB) {
	t.Helper()
	if !ecnudp.Supported {
		t.Skip("no ECN socket options on " + runtime.GOOS)
	}
}

// Listen is a UDP socket on addr ("127.0.0.1:0", "[::1]:0"), closed when
// t ends. It skips t where Need does, and where the system cannot listen
// on addr (a host without IPv6).
func Listen(t testing.TB, addr string) *net.UDPConn {
	t.Helper()
	Need(t)
	c, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.MustParseAddrPort(addr)))
	if err != nil {
		t.Skipf("no %s: %v", addr, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}
