package main

import (
	"os"

	"github.com/pi2hop/pi2hop/internal/cli"
	"github.com/pi2hop/pi2hop/internal/privs"
)

// needPrivs is the one-line exit-2 error of a command the process lacks
// the capabilities for (nil when it has them, or the system cannot say);
// the TUN device is checked too, as a container may not have it.
func needPrivs(command, why string, want ...privs.Cap) error {
	if app.GOOS != "linux" {
		return nil
	}
	if err := privs.Effective().Need(command, why, want...); err != nil {
		return &cli.PlatformError{Msg: "pi2hop " + err.Error()}
	}
	if _, err := os.Stat("/dev/net/tun"); err != nil {
		return &cli.PlatformError{Msg: "pi2hop " + command + " needs the TUN device /dev/net/tun; load the tun module, or add it (docker: --device /dev/net/tun)"}
	}
	return nil
}
