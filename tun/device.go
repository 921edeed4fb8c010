// Package tun opens TUN devices and prepares the network around them:
// namespaces, links, addresses, routes, policy rules and sysctls, each
// change recorded in a Journal so that it can be undone in reverse order,
// by this process on exit or by a later one after a crash.
//
// The data path sees only Device (and, on Linux, Pollable); the backend
// behind it is songgao/water today, one packet per system call, and can be
// replaced by a faster one (vnet header, offloads) without touching hop.
//
// Everything that touches the kernel is Linux-only (files *_linux.go); on
// other systems the same functions return ErrUnsupported.
package tun

import "errors"

// Device is one TUN device carrying raw IPv4/IPv6 packets (no packet-info
// header). Batches follow wireguard-go's shape; this backend moves one
// packet per system call inside them.
type Device interface {
	// Read blocks until at least one packet is available and reads up to
	// len(bufs) packets, packet i into bufs[i] with its length in sizes[i]
	// (len(sizes) >= len(bufs)). Packets read before an error are counted
	// in n. After Close it returns os.ErrClosed.
	Read(bufs [][]byte, sizes []int) (n int, err error)

	// Write writes each buffer as one packet and returns how many were
	// written before the first error.
	Write(bufs [][]byte) (int, error)

	Name() string // interface name
	MTU() int     // the MTU the device was opened with
	Close() error // idempotent; unblocks a pending Read
}

// Pollable is a Device that an event loop can drive without a goroutine
// per device: it waits for PollFd to become readable (ppoll POLLIN, level
// triggered) and then drains the device with TryRead.
type Pollable interface {
	Device
	// PollFd returns a descriptor that polls readable whenever TryRead may
	// return packets. It stays valid until Close; the caller must stop
	// polling it before calling Close.
	PollFd() int
	// TryRead is Read without blocking: it returns n == 0 and a nil error
	// when no packet is waiting.
	TryRead(bufs [][]byte, sizes []int) (n int, err error)
}

// DropCounter is implemented by devices whose kernel side can drop
// packets before we read them (the TUN ring, txqueuelen packets long).
type DropCounter interface {
	// RingDrops returns the device's cumulative tx_dropped counter.
	RingDrops() (uint64, error)
}

// ErrUnsupported is returned on systems without Linux TUN and netlink.
var ErrUnsupported = errors.New("tun: TUN devices and network namespaces are supported on Linux only")

// DefaultTxQueueLen is the TUN ring length set on devices we open: the
// kernel's default for TUN (500). The hop drains the ring in batches, so the
// backlog sits in its AQM, not here; drops here are reported as ring drops.
const DefaultTxQueueLen = 500

// NetnsDir is where named namespaces are bind-mounted, as by `ip netns add`,
// so `ip netns exec NAME ...` works on ours.
const NetnsDir = "/run/netns"
