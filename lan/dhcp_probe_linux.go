package lan

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"time"

	"github.com/insomniacslk/dhcp/dhcpv4/nclient4"
)

// OtherServer is a DHCP server that answered a probe.
type OtherServer struct {
	Iface   string
	ID      netip.Addr // its server identifier (option 54), or siaddr
	Offered netip.Addr // the address it offered the probe
}

func (o *OtherServer) Error() string {
	return fmt.Sprintf("another DHCP server answers on %s: %v (it offered %v); stop it or share another LAN", o.Iface, o.ID, o.Offered)
}

// ProbeDHCP sends one DISCOVER out of iface from its own hardware
// address, over a raw socket (so it needs no address on iface and no
// port 68), and waits up to wait for an OFFER. It returns the server
// that answered, nil if none did within wait. Call it in the namespace
// of iface, before starting a server of ours there.
func ProbeDHCP(iface string, wait time.Duration) (*OtherServer, error) {
	c, err := nclient4.New(iface, nclient4.WithTimeout(wait), nclient4.WithRetry(1))
	if err != nil {
		return nil, fmt.Errorf("lan: DHCP probe on %s: %w", iface, err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), wait+time.Second)
	defer cancel()
	offer, err := c.DiscoverOffer(ctx)
	if errors.Is(err, nclient4.ErrNoResponse) || errors.Is(err, context.DeadlineExceeded) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("lan: DHCP probe on %s: %w", iface, err)
	}
	o := &OtherServer{Iface: iface}
	o.ID, _ = netip.AddrFromSlice(offer.ServerIdentifier().To4())
	if !o.ID.IsValid() {
		o.ID, _ = netip.AddrFromSlice(offer.ServerIPAddr.To4())
	}
	o.Offered, _ = netip.AddrFromSlice(offer.YourIPAddr.To4())
	return o, nil
}
