//go:build !linux

package tuntest

// notifier does nothing off Linux: there the device is not Pollable.
type notifier struct{}

func (n *notifier) open() error { return nil }
func (n *notifier) signal()     {}
func (n *notifier) reset()      {}
func (n *notifier) close()      {}
