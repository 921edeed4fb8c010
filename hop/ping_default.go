//go:build !linux

package hop

import (
	"net/netip"
	"time"

	"github.com/pi2hop/pi2hop/tun"
)

// MedianPing needs Linux (namespaces, kernel receive timestamps).
func MedianPing(ns string, dst netip.Addr, n int, gap time.Duration) (time.Duration, error) {
	return 0, tun.ErrUnsupported
}
