//go:build !linux

package hop

import "github.com/pi2hop/pi2hop/tun"

func startFloor(prio int) (*floor, error) { return nil, tun.ErrUnsupported }
