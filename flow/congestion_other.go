//go:build !linux

package flow

import (
	"errors"
	"syscall"
)

// SetCongestion needs Linux's TCP_CONGESTION socket option.
func SetCongestion(c syscall.Conn, name string) error {
	return errors.New("choosing a TCP congestion control is only supported on Linux")
}
