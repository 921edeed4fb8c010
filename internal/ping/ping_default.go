//go:build !linux

package ping

import (
	"net/netip"
	"time"

	"github.com/pi2hop/pi2hop/netsys"
)

// Median needs Linux (namespaces, kernel receive timestamps).
func Median(ns string, dst netip.Addr, n int, gap time.Duration) (time.Duration, error) {
	return 0, netsys.ErrUnsupported
}
