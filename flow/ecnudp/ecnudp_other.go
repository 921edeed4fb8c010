//go:build !linux && !darwin && !freebsd

package ecnudp

import (
	"fmt"
	"net"
	"net/netip"
	"runtime"
	"time"

	"github.com/pi2hop/pi2hop/aqm"
)

// Elsewhere the endpoints cannot set or read the ECN field through the
// socket options they use (Windows ignores IP_TOS and has no
// IP_RECVTOS/IPV6_RECVTCLASS): the functions that need one say which, and
// the rest keep the package building.

// Supported says this system has the ECN socket options the package uses.
const Supported = false

// errNeeds is the error of an endpoint that needs the socket options opts
// to do what.
func errNeeds(opts, what string) error {
	return fmt.Errorf("ecnudp: %s needs the %s socket options, not available on %s (Linux, macOS and FreeBSD have them)", what, opts, runtime.GOOS)
}

func EnableReceive(*net.UDPConn) error {
	return errNeeds("IP_RECVTOS and IPV6_RECVTCLASS", "reading the ECN field of received datagrams")
}

func EnableTTL(*net.UDPConn) error {
	return errNeeds("IP_RECVTTL and IPV6_RECVHOPLIMIT", "reading the TTL of received datagrams")
}
func AppendTOS(b []byte, _ netip.AddrPort, _ uint8) []byte { return b }
func SetECN(*net.UDPConn, aqm.ECN) error {
	return errNeeds("IP_TOS and IPV6_TCLASS", "setting the ECN field of sent datagrams")
}

func ParseECN([]byte) (aqm.ECN, bool)                         { return 0, false }
func ParseControl([]byte) Control                             { return Control{} }
func AppendCmsg(b []byte, _ netip.AddrPort, _ aqm.ECN) []byte { return b }

type Waiter struct{ c *net.UDPConn }

func NewWaiter(c *net.UDPConn) *Waiter { return &Waiter{c: c} }
func Precise()                         {}
func Favour() bool                     { return false }

// Wait falls back to the netpoller's millisecond precision.
func (w *Waiter) Wait(d time.Duration) (bool, error) {
	time.Sleep(d)
	return false, nil
}

func (w *Waiter) TryRead(buf []byte) (int, netip.AddrPort, bool, error) {
	return 0, netip.AddrPort{}, false, errNeeds("IP_RECVTOS and IPV6_RECVTCLASS", "reading a datagram with its ECN field")
}

func (w *Waiter) TryReadMsg(buf, oob []byte) (int, int, netip.AddrPort, bool, error) {
	return 0, 0, netip.AddrPort{}, false, errNeeds("IP_RECVTOS and IPV6_RECVTCLASS", "reading a datagram with its ECN field")
}
