//go:build !linux && !darwin && !freebsd

package ecnudp

import (
	"net"
	"testing"
)

func setTTL(*testing.T, *net.UDPConn, bool, int) {}
