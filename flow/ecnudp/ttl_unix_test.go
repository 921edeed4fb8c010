//go:build linux || darwin || freebsd

package ecnudp

import (
	"net"
	"testing"

	"golang.org/x/sys/unix"
)

// setTTL sets the TTL (IPv4) or unicast hop limit (IPv6) of what c sends.
func setTTL(t *testing.T, c *net.UDPConn, v6 bool, ttl int) {
	t.Helper()
	err := control(c, func(fd int) error {
		if v6 {
			return unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_UNICAST_HOPS, ttl)
		}
		return unix.SetsockoptInt(fd, unix.IPPROTO_IP, unix.IP_TTL, ttl)
	})
	if err != nil {
		t.Fatal(err)
	}
}
