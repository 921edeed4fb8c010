//go:build !linux

package check

import (
	"context"
	"errors"
)

// Box is Linux's: forwarding, nftables, qdiscs and offloads are read
// through Linux interfaces.
func Box(context.Context, BoxOptions) ([]Finding, error) {
	return nil, errors.New("--box runs on Linux only (it reads the kernel's forwarding, firewall and qdiscs)")
}
