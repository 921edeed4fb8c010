package main

import (
	"fmt"
	"runtime"
)

// goos is the system Run dispatches for; a test sets another.
var goos = runtime.GOOS

// linuxOnly names each command that runs only on Linux and what it needs
// there. Elsewhere it exits 2 with one line saying so; its help still
// works, as do replay, analyze, flow and help themselves (their packages
// link nothing of TUN, netlink or nftables).
var linuxOnly = map[string]string{
	"run":   "TUN devices, netlink, policy routing",
	"shell": "TUN devices, network namespaces",
	"share": "TUN devices, netlink, nftables",
	"lab":   "network namespaces, veth pairs, TUN devices",
	"stats": "a local instance started by run, shell or share",
	"set":   "a local instance started by run, shell or share",
}

// platformError is a command this system cannot run: printed as is, one
// line, exit 2.
type platformError struct{ msg string }

func (e *platformError) Error() string { return e.msg }

// needsLinux returns the error command c gives on goos, or nil when it
// runs there. A subcommand needs what its top-level command needs.
func needsLinux(c *command, goos string) error {
	top := c
	for top.parent != nil {
		top = top.parent
	}
	need, ok := linuxOnly[top.name]
	if !ok || goos == "linux" {
		return nil
	}
	return &platformError{fmt.Sprintf("pi2hop %s: needs Linux (%s)", top.name, need)}
}
