//go:build !linux

package check

import (
	"context"
	"errors"
)

// RunTrace needs Linux here: the routers' quotes are read on a raw ICMP
// socket, and only the Linux one is written.
func RunTrace(context.Context, TraceOptions) (*Trace, error) {
	return nil, errors.New("--trace runs on Linux only (it reads the routers' ICMP quotes on a raw socket)")
}
