//go:build !linux

package instance

import "errors"

func peerUID(fd int) (uint32, error) {
	return 1, errors.New("control socket: peer credentials are supported on Linux only")
}
