// Package tuntest provides an in-memory tun.Device for tests that need no
// root and no kernel devices.
package tuntest

import (
	"os"
	"sync"
)

// ChannelDevice is a tun.Device backed by channels. A test injects packets
// with Inject (what the kernel would hand the device) and receives what
// the device was asked to write from Outbound. On Linux it is also a
// tun.Pollable, so the hop's event loop drives it as it drives a TUN.
type ChannelDevice struct {
	// Outbound carries a copy of every packet written to the device.
	Outbound chan []byte

	inbound chan []byte
	name    string
	mtu     int
	closed  chan struct{}
	once    sync.Once
	notify  notifier
}

// NewChannelDevice returns a device holding up to depth packets each way.
func NewChannelDevice(name string, mtu, depth int) (*ChannelDevice, error) {
	d := &ChannelDevice{
		Outbound: make(chan []byte, depth),
		inbound:  make(chan []byte, depth),
		name:     name,
		mtu:      mtu,
		closed:   make(chan struct{}),
	}
	if err := d.notify.open(); err != nil {
		return nil, err
	}
	return d, nil
}

// Inject queues pkt to be read from the device; the device keeps pkt.
// It blocks while the device holds depth unread packets, and returns
// false if the device is closed.
func (d *ChannelDevice) Inject(pkt []byte) bool {
	select {
	case <-d.closed:
		return false
	default:
	}
	select {
	case d.inbound <- pkt:
		d.notify.signal()
		return true
	case <-d.closed:
		return false
	}
}

func (d *ChannelDevice) Name() string { return d.name }
func (d *ChannelDevice) MTU() int     { return d.mtu }

// Read blocks for the first packet and takes what else is waiting.
func (d *ChannelDevice) Read(bufs [][]byte, sizes []int) (int, error) {
	if len(bufs) == 0 {
		return 0, nil
	}
	select {
	case p := <-d.inbound:
		sizes[0] = copy(bufs[0], p)
	case <-d.closed:
		return 0, os.ErrClosed
	}
	n, err := d.TryRead(bufs[1:], sizes[1:])
	return 1 + n, err
}

// TryRead takes up to len(bufs) waiting packets without blocking.
func (d *ChannelDevice) TryRead(bufs [][]byte, sizes []int) (int, error) {
	select {
	case <-d.closed:
		return 0, os.ErrClosed
	default:
	}
	// Reset the readiness signal before draining, so a packet injected
	// after the drain always leaves the descriptor readable.
	d.notify.reset()
	for i := range bufs {
		select {
		case p := <-d.inbound:
			sizes[i] = copy(bufs[i], p)
		default:
			return i, nil
		}
	}
	if len(d.inbound) > 0 {
		d.notify.signal() // more than one batch waiting
	}
	return len(bufs), nil
}

// Write copies each packet to Outbound, blocking while it is full.
func (d *ChannelDevice) Write(bufs [][]byte) (int, error) {
	for i, b := range bufs {
		select {
		case d.Outbound <- append([]byte(nil), b...):
		case <-d.closed:
			return i, os.ErrClosed
		}
	}
	return len(bufs), nil
}

// Close makes Read, TryRead and Write fail with os.ErrClosed. Idempotent.
func (d *ChannelDevice) Close() error {
	d.once.Do(func() {
		close(d.closed)
		d.notify.close()
	})
	return nil
}
