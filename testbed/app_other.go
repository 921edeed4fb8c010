//go:build !linux

package testbed

import (
	"context"
	"errors"

	"github.com/pi2hop/pi2hop/invoker"
	"github.com/pi2hop/pi2hop/testbed/report"
)

// errAppLinux: lab app runs the user's commands in Linux network
// namespaces.
var errAppLinux = errors.New("lab app needs Linux (network namespaces)")

func RunApp(context.Context, AppConfig, Options) (*report.Report, error) { return nil, errAppLinux }

func CheckAppCommand(string, *invoker.User) error { return errAppLinux }
