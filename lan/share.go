package lan

import (
	"log/slog"
	"net/netip"
	"sync"
	"time"
)

// ShareConfig is a LAN that the box shares its WAN with: what a Mac's
// Internet Sharing sets up, without the bottleneck (topology.Gateway's part).
type ShareConfig struct {
	NS  string // the box's namespace ("" = the host's)
	LAN string // the device the phones and laptops are on
	WAN string // the way to the Internet

	Subnet netip.Prefix // zero: ChooseSubnet (192.168.2.0/24 first)
	// NoIPv6 turns off the ULA prefix, its RAs and NAT66. Without it they
	// are set up only when the WAN has IPv6 (WANHasIPv6).
	NoIPv6 bool
	ULA    netip.Prefix // zero: NewULA (pass the saved one to keep it across restarts)

	DNS       []netip.AddrPort // upstreams; zero: Resolvers(ResolvConf)
	LeaseTime time.Duration    // zero: DefaultLeaseTime
	Leases    []Lease          // the saved lease table
	OnLeases  func([]Lease)    // called after each change of the table
	// ProbeWait bounds the look for another DHCP server on the LAN
	// (default 2 s); negative skips the probe.
	ProbeWait  time.Duration
	RAInterval time.Duration // zero: DefaultRAInterval
	Table      string        // nftables table for NAT and counting, e.g. "pi2hop-NAME"
	// WANSide, when a hop loops the LAN's traffic through TUN devices of
	// this box (topology.Gateway), are the WAN and the TUN the hop writes
	// uplink packets into: see netsys.NAT.WANSide. Empty without such a hop.
	WANSide []string
	Log     *slog.Logger
}

// Share is a running shared LAN.
type Share struct {
	Subnet  netip.Prefix // the LAN's IPv4 subnet
	Router  netip.Addr   // the box on the LAN
	ULA     netip.Prefix // the LAN's IPv6 prefix; zero when IPv6 is off
	Router6 netip.Addr

	cfg  ShareConfig
	dhcp *DHCPServer
	dns  *DNSForwarder
	ra   *Advertiser
	wg   sync.WaitGroup
	errs chan error
	once sync.Once
}

// Client is one device on the LAN: its lease (if it has one) and what
// was forwarded from it (Up: as it sent it, before the bottleneck) and
// to it (Down: as delivered, after the bottleneck), IPv4 and IPv6.
type Client struct {
	Lease
	Addrs6   []netip.Addr `json:"addrs6,omitempty"`
	Up, Down uint64
}
