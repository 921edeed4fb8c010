package report

import (
	"bytes"
	"runtime"
	"runtime/debug"

	"golang.org/x/sys/unix"
)

// CurrentVersions describes this binary and the machine it runs on.
func CurrentVersions() Versions {
	v := Versions{Pi2hop: "unknown", Go: runtime.Version(), OS: runtime.GOOS + "/" + runtime.GOARCH}
	if bi, ok := debug.ReadBuildInfo(); ok {
		v.Pi2hop = bi.Main.Version
		var rev, dirty string
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				if s.Value == "true" {
					dirty = "+dirty"
				}
			}
		}
		if rev != "" {
			v.Pi2hop = rev[:min(12, len(rev))] + dirty
		}
	}
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		v.Kernel = string(bytes.TrimRight(u.Release[:], "\x00"))
	}
	return v
}
