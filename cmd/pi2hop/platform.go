package main

import (
	"fmt"
	"runtime"
)

// goos is the system Run dispatches for; a test sets another.
var goos = runtime.GOOS

// platformError is a command this system cannot run: printed as is, one
// line, exit 2.
type platformError struct{ msg string }

func (e *platformError) Error() string { return e.msg }

// needsLinux returns the error command c gives on goos, or nil when it
// runs there. A subcommand needs what its top-level command needs. Help
// works everywhere, as do replay, analyze, flow and help themselves (their
// packages link nothing of TUN, netlink or nftables).
func needsLinux(c *command, goos string) error {
	top := c
	for top.parent != nil {
		top = top.parent
	}
	if top.linux == "" || goos == "linux" {
		return nil
	}
	return &platformError{fmt.Sprintf("pi2hop %s: needs Linux (%s)", top.name, top.linux)}
}
