package lan

import (
	"crypto/rand"
	"fmt"
	"net/netip"
	"time"

	"github.com/mdlayher/ndp"
)

// NewULA returns a random unique local /64 (RFC 4193 section 3.2: fd00::/8
// with a random 40-bit global ID, subnet 0).
func NewULA() netip.Prefix {
	var b [16]byte
	b[0] = 0xfd
	rand.Read(b[1:6])
	return netip.PrefixFrom(netip.AddrFrom16(b), 64)
}

// RouterAddr6 is the box's address in the ULA prefix p: p::1.
func RouterAddr6(p netip.Prefix) netip.Addr {
	return p.Masked().Addr().Next()
}

// Router advertisement timing and lifetimes. The interval is RFC 4861's
// MaxRtrAdvInterval default (section 6.2.1), each gap drawn between a
// third of it and it (section 6.2.4); the first few are sooner
// (MAX_INITIAL_RTR_ADVERT_INTERVAL, section 10). The lifetimes are the
// defaults radvd uses, and RFC 8106's 3 x MaxRtrAdvInterval for RDNSS.
const (
	DefaultRAInterval   = 600 * time.Second
	initialRAInterval   = 16 * time.Second
	initialRACount      = 3                      // MAX_INITIAL_RTR_ADVERTISEMENTS
	minDelayBetweenRAs  = 3 * time.Second        // MIN_DELAY_BETWEEN_RAS
	maxRADelay          = 500 * time.Millisecond // MAX_RA_DELAY_TIME
	prefixValidLife     = 24 * time.Hour
	prefixPreferredLife = 4 * time.Hour
)

// RAConfig is what the box advertises on the LAN.
type RAConfig struct {
	Iface    string
	Prefix   netip.Prefix  // the ULA /64 devices form addresses in (SLAAC)
	DNS      []netip.Addr  // RDNSS servers (RFC 8106); default RouterAddr6(Prefix)
	Interval time.Duration // MaxRtrAdvInterval; default DefaultRAInterval
}

func (c *RAConfig) fill() error {
	if !c.Prefix.IsValid() || !c.Prefix.Addr().Is6() || c.Prefix.Addr().Is4In6() || c.Prefix.Bits() != 64 {
		return fmt.Errorf("lan: RA prefix %v: want an IPv6 /64 (SLAAC needs 64 bits of interface ID)", c.Prefix)
	}
	c.Prefix = c.Prefix.Masked()
	if len(c.DNS) == 0 {
		c.DNS = []netip.Addr{RouterAddr6(c.Prefix)}
	}
	if c.Interval == 0 {
		c.Interval = DefaultRAInterval
	}
	if c.Interval < 4*time.Second || c.Interval > 1800*time.Second {
		return fmt.Errorf("lan: RA interval %v: want 4s..1800s (RFC 4861 section 6.2.1)", c.Interval)
	}
	return nil
}

// routerLifetime is AdvDefaultLifetime's default, 3 x MaxRtrAdvInterval
// (at most 9000 s).
func (c *RAConfig) routerLifetime() time.Duration { return 3 * c.Interval }

// message is the advertisement: the box as default router, the prefix
// on-link and for SLAAC, the DNS servers, the box's hardware address and
// the link MTU. The final one (the box stops sharing) has every lifetime
// 0: devices stop routing through the box (RFC 4861 section 6.2.5),
// deprecate their addresses in the prefix (RFC 4862 section 5.5.3 keeps
// them two more hours, but no new connection uses them) and forget the
// DNS server (RFC 8106 section 5.1); and the box itself, which may hear
// its own multicast, forms no address from it.
func (c *RAConfig) message(final bool, hw []byte, mtu int) *ndp.RouterAdvertisement {
	routerLife, valid, preferred, dnsLife := c.routerLifetime(), prefixValidLife, prefixPreferredLife, c.routerLifetime()
	if final {
		routerLife, valid, preferred, dnsLife = 0, 0, 0, 0
	}
	opts := []ndp.Option{
		&ndp.PrefixInformation{
			PrefixLength:                   64,
			OnLink:                         true,
			AutonomousAddressConfiguration: true,
			ValidLifetime:                  valid,
			PreferredLifetime:              preferred,
			Prefix:                         c.Prefix.Addr(),
		},
		&ndp.RecursiveDNSServer{Lifetime: dnsLife, Servers: c.DNS},
	}
	if len(hw) > 0 {
		opts = append(opts, &ndp.LinkLayerAddress{Direction: ndp.Source, Addr: hw})
	}
	if mtu >= 1280 {
		opts = append(opts, ndp.NewMTU(uint32(mtu)))
	}
	return &ndp.RouterAdvertisement{
		CurrentHopLimit:           64,
		RouterSelectionPreference: ndp.Medium,
		RouterLifetime:            routerLife,
		Options:                   opts,
	}
}
