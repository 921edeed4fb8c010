package main

import (
	"fmt"
	"os"
	"runtime"

	"github.com/pi2hop/pi2hop/internal/privs"
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

// needPrivs is the one-line exit-2 error of a command the process lacks
// the capabilities for (nil when it has them, or the system cannot say);
// the TUN device is checked too, as a container may not have it.
func needPrivs(command, why string, want ...privs.Cap) error {
	if goos != "linux" {
		return nil
	}
	if err := privs.Effective().Need(command, why, want...); err != nil {
		return &platformError{"pi2hop " + err.Error()}
	}
	if _, err := os.Stat("/dev/net/tun"); err != nil {
		return &platformError{"pi2hop " + command + " needs the TUN device /dev/net/tun; load the tun module, or add it (docker: --device /dev/net/tun)"}
	}
	return nil
}
