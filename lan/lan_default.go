//go:build !linux

package lan

import (
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"time"
)

var errUnsupported = errors.New("lan: needs Linux")

// OtherServer is a DHCP server that answered a probe.
type OtherServer struct {
	Iface   string
	ID      netip.Addr
	Offered netip.Addr
}

func (o *OtherServer) Error() string {
	return fmt.Sprintf("another DHCP server answers on %s: %v (it offered %v)", o.Iface, o.ID, o.Offered)
}

func ProbeDHCP(iface string, wait time.Duration) (*OtherServer, error) { return nil, errUnsupported }
func BoxInUse(ns string) ([]InUse, error)                              { return nil, errUnsupported }
func WANHasIPv6(ns, wan string) (bool, error)                          { return false, errUnsupported }

// Advertiser sends router advertisements (Linux only).
type Advertiser struct{}

func NewAdvertiser(cfg RAConfig, wait time.Duration, log *slog.Logger) (*Advertiser, error) {
	return nil, errUnsupported
}
func (a *Advertiser) Serve() error { return errUnsupported }
func (a *Advertiser) Close() error { return nil }
