//go:build unix

package report

import (
	"bytes"

	"golang.org/x/sys/unix"
)

// kernelRelease is uname -r; "" when uname fails.
func kernelRelease() string {
	var u unix.Utsname
	if unix.Uname(&u) != nil {
		return ""
	}
	return string(bytes.TrimRight(u.Release[:], "\x00"))
}
