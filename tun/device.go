// Package tun opens TUN devices: the network devices through which the
// hop reads the packets the kernel routes into it and writes them back.
// Where a device lives (its namespace) and the routes into it are the
// caller's: see package netsys, which journals such changes.
//
// The data path sees only Device (and, on Linux, Pollable). Two backends
// serve it: the offload one (IFF_VNET_HDR, TSO/USO super-packets split on
// read and coalesced on write, offload_linux.go) and songgao/water, one
// packet per system call, the fallback. Either way every buffer holds one
// IP packet of at most the MTU.
//
// Everything that touches the kernel is Linux-only (files *_linux.go); on
// other systems the same functions return ErrUnsupported.
package tun

import (
	"errors"
	"fmt"
)

// Device is one TUN device carrying raw IPv4/IPv6 packets (no packet-info
// header), each at most MTU bytes. Batches follow wireguard-go's shape.
type Device interface {
	// Read blocks until at least one packet is available and reads up to
	// len(bufs) packets, packet i into bufs[i] with its length in sizes[i]
	// (len(sizes) >= len(bufs)). Packets read before an error are counted
	// in n. After Close it returns os.ErrClosed.
	Read(bufs [][]byte, sizes []int) (n int, err error)

	// Write writes each buffer as one packet and returns how many were
	// written before the first error (the packet at that index is the
	// one that failed). A backend may hand consecutive packets to the
	// kernel in one system call, but only where the kernel then sees
	// exactly those packets.
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
	// when no packet is waiting. It returns n < len(bufs) only when
	// nothing is left, neither in the kernel nor held back by the device
	// (the offload backend keeps the segments of a super-packet that did
	// not fit for the next call, which PollFd may not announce).
	TryRead(bufs [][]byte, sizes []int) (n int, err error)
}

// PartialReader is a Pollable that can leave the checksums of the segments
// it cuts from super-packets partial (the offload backend): two passes
// over every byte saved, the splitter's and the coalescer's verification,
// when the packet leaves through a PartialWriter. Whoever else is to see
// such a packet (a capture, a device without offloads) completes it first
// with CompleteChecksum.
type PartialReader interface {
	Pollable
	// TryReadPartial is TryRead, and sets partial[i] (len(partial) >=
	// len(bufs)) when packet i's TCP/UDP checksum field holds the
	// pseudo-header sum rather than the checksum.
	TryReadPartial(bufs [][]byte, sizes []int, partial []bool) (n int, err error)
}

// PartialWriter is a Device that takes packets with partial checksums as
// TryReadPartial leaves them, and hands them to the kernel as such
// (NEEDS_CSUM): the kernel completes them where it must.
type PartialWriter interface {
	Device
	// WritePartial is Write, where partial[i] (len(partial) >= len(bufs))
	// says that bufs[i]'s checksum is partial.
	WritePartial(bufs [][]byte, partial []bool) (int, error)
}

// Backend names a TUN backend.
type Backend string

const (
	// BackendOffload: vnet header with checksum offload and TSO (USO too
	// where the kernel has it); falls back to plain if refused.
	BackendOffload Backend = "offload"
	// BackendPlain: no offload, one packet per system call (through
	// songgao/water).
	BackendPlain Backend = "plain"
)

// ParseBackend reads a --tun value. "water", the library's name that
// plain had before it was named for what it does, still reads as plain.
func ParseBackend(s string) (Backend, error) {
	switch b := Backend(s); b {
	case BackendOffload, BackendPlain:
		return b, nil
	case "water":
		return BackendPlain, nil
	}
	return "", fmt.Errorf("tun backend %q: want %s or %s", s, BackendOffload, BackendPlain)
}

// Describer is implemented by the devices this package opens.
type Describer interface {
	// Backend says which backend serves the device, for the start-up
	// line: "offload (csum tso4 tso6 uso4 uso6)" with the offloads the
	// kernel accepted, or "plain", with the reason when offload was
	// asked for and refused.
	Backend() string
}

// OffloadCounter is implemented by devices of the offload backend.
type OffloadCounter interface {
	OffloadStats() OffloadStats
}

// DropCounter is implemented by devices whose kernel side can drop
// packets before we read them (the TUN ring, txqueuelen packets long).
type DropCounter interface {
	// RingDrops returns the device's cumulative tx_dropped counter.
	RingDrops() (uint64, error)
}

// ErrUnsupported is returned on systems without Linux TUN devices.
var ErrUnsupported = errors.New("tun: TUN devices are supported on Linux only")

// DefaultTxQueueLen is the TUN ring length set on devices we open: the
// kernel's default for TUN (500). The hop drains the ring in batches, so the
// backlog sits in its AQM, not here; drops here are reported as ring drops.
const DefaultTxQueueLen = 500
