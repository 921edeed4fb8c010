package report

import "github.com/pi2hop/pi2hop/internal/buildinfo"

// CurrentVersions describes this binary and the machine it runs on; the
// pi2hop version is spelt as `pi2hop version` spells it.
func CurrentVersions() Versions {
	bi := buildinfo.Read()
	v := Versions{Pi2hop: bi.String(), Go: bi.Go, OS: bi.Platform}
	v.Kernel = kernelRelease()
	return v
}
