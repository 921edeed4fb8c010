//go:build !linux

package lan

import (
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"time"

	"github.com/pi2hop/pi2hop/netsys"
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

func StartShare(j *netsys.Journal, cfg ShareConfig) (*Share, error) { return nil, errUnsupported }
func (s *Share) Close() error                                       { return nil }
func (s *Share) Err() <-chan error                                  { return nil }
func (s *Share) Leases() []Lease                                    { return nil }
func (s *Share) Clients() ([]Client, error)                         { return nil, errUnsupported }
