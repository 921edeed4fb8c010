//go:build !linux

package ecnudp

import (
	"errors"
	"net"
	"net/netip"
	"time"

	"github.com/pi2hop/pi2hop/aqm"
)

// Elsewhere than Linux the socket functions report errUnsupported, so
// that the module still builds and its other packages can be tested.

var errUnsupported = errors.New("ecnudp: ECN on UDP sockets is only supported on Linux")

func EnableReceive(*net.UDPConn) error                        { return errUnsupported }
func SetECN(*net.UDPConn, aqm.ECN) error                      { return errUnsupported }
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
	return 0, netip.AddrPort{}, false, errUnsupported
}

func (w *Waiter) TryReadMsg(buf, oob []byte) (int, int, netip.AddrPort, bool, error) {
	return 0, 0, netip.AddrPort{}, false, errUnsupported
}
