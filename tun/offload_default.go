//go:build !linux

package tun

// OpenBackend needs Linux, as Open does.
func OpenBackend(name string, mtu int, b Backend) (Device, error) { return nil, ErrUnsupported }

// OpenInBackend needs Linux, as OpenIn does.
func OpenInBackend(ns, name string, mtu int, b Backend) (Device, error) { return nil, ErrUnsupported }

// OpenTUNBackend needs Linux, as OpenTUN does.
func (j *Journal) OpenTUNBackend(ns, name string, mtu int, b Backend) (Device, error) {
	return nil, ErrUnsupported
}
