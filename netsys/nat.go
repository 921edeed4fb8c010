package netsys

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
	// WANSide, if set, are the devices on the WAN side of a hop that
	// loops the LAN's traffic through TUN devices of this same box
	// (topology.Gateway): the WAN itself and the TUN the hop writes uplink
	// packets into. Their packets (and the box's own out of Out) get
	// conntrack zone 1, so each pass through the box is tracked in its
	// own zone: otherwise the first pass (LAN to TUN) fixes the
	// connection's NAT as "none" before the second one reaches the WAN.
	WANSide []string
}

// Bytes is what was forwarded from (Up) and to (Down) one address.
type Bytes struct {
	Up, Down uint64
}
