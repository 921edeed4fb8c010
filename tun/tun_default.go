//go:build !linux

package tun

// Open needs Linux; this keeps the package building elsewhere.
func Open(name string, mtu int) (Device, error) { return nil, ErrUnsupported }
