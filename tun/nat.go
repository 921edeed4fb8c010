package tun

import "net/netip"

// NAT is a router's nftables table (family inet).
type NAT struct {
	Table string
	// Out is the WAN: only packets leaving by it are masqueraded (""
	// = any device).
	Out string
	// Sources are masqueraded: an IPv4 prefix to the address of Out,
	// an IPv6 one the same way (NAT66, for a ULA prefix that the WAN
	// would not route back).
	Sources []netip.Prefix
	// CountLAN, if set, counts the bytes forwarded from and to each
	// address on that device (ClientBytes reads them): per-device
	// traffic for stats, kept by the kernel, off the hop's packet path.
	CountLAN string
}

// Bytes is what was forwarded from (Up) and to (Down) one address.
type Bytes struct {
	Up, Down uint64
}
