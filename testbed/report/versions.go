package report

import (
	"bytes"

	"github.com/pi2hop/pi2hop/internal/buildinfo"
	"golang.org/x/sys/unix"
)

// CurrentVersions describes this binary and the machine it runs on; the
// pi2hop version is spelt as `pi2hop version` spells it.
func CurrentVersions() Versions {
	bi := buildinfo.Read()
	v := Versions{Pi2hop: bi.String(), Go: bi.Go, OS: bi.Platform}
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		v.Kernel = string(bytes.TrimRight(u.Release[:], "\x00"))
	}
	return v
}
