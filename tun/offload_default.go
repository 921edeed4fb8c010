//go:build !linux

package tun

// OpenBackend needs Linux, as Open does.
func OpenBackend(name string, mtu int, b Backend) (Device, error) { return nil, ErrUnsupported }
