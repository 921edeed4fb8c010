//go:build !linux

package wakeprobe

// Start needs Linux.
func Start(prio int, report func(Report), exited func()) (*Probes, error) {
	return nil, ErrUnsupported
}
