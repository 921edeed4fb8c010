//go:build !linux

package instance

import (
	"io/fs"
	"syscall"

	"github.com/pi2hop/pi2hop/invoker"
)

// Instances run on Linux only (their shells, state folders and journals
// are Linux's); these keep the package building elsewhere.

func childAttr(*invoker.User) *syscall.SysProcAttr { return nil }

func fileOwner(fs.FileInfo) (uint32, bool) { return 0, false }
