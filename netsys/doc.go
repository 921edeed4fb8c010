// Package netsys changes the box's network state: namespaces, links,
// addresses, routes, policy rules, nftables tables (NAT) and sysctls,
// each change recorded in a Journal so that it can be undone in reverse
// order, by this process on exit or by a later one after a crash (from
// the entries saved with SaveFile).
//
// It opens no TUN devices (package tun does); a caller that wants one in
// a namespace, journalled, opens it inside Journal.AddLink.
//
// Everything that touches the kernel is Linux-only (files *_linux.go); on
// other systems the same functions return ErrUnsupported.
package netsys

import "errors"

// ErrUnsupported is returned on systems without Linux network namespaces,
// netlink and nftables.
var ErrUnsupported = errors.New("netsys: network namespaces, netlink and nftables are supported on Linux only")

// NetnsDir is where named namespaces are bind-mounted, as by `ip netns add`,
// so `ip netns exec NAME ...` works on ours.
const NetnsDir = "/run/netns"
