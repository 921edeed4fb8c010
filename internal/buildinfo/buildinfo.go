// Package buildinfo reads what the binary knows of its own build, and
// spells it once, for `pi2hop version` and the lab report alike.
package buildinfo

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Info describes a build.
type Info struct {
	Module   string // module path
	Version  string // module version: "(devel)" from a work tree, "(unknown)" without build information
	Revision string // VCS revision the build recorded; "" if none
	Modified bool   // the work tree had uncommitted changes
	Go       string // runtime.Version()
	Platform string // GOOS/GOARCH
}

// Read describes this binary.
func Read() Info {
	bi, _ := debug.ReadBuildInfo()
	return From(bi)
}

// From describes the build bi records (nil: no build information).
func From(bi *debug.BuildInfo) Info {
	info := Info{
		Module:   "github.com/pi2hop/pi2hop",
		Version:  "(unknown)",
		Go:       runtime.Version(),
		Platform: runtime.GOOS + "/" + runtime.GOARCH,
	}
	if bi == nil {
		return info
	}
	if bi.Main.Path != "" {
		info.Module = bi.Main.Path
	}
	if bi.Main.Version != "" {
		info.Version = bi.Main.Version
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			info.Revision = s.Value
		case "vcs.modified":
			info.Modified = s.Value == "true"
		}
	}
	return info
}

// String is the one spelling of a build's version: the module version,
// then the revision cut to 12 hex digits (as Go's pseudo-versions cut it)
// and "(modified)" when the build recorded them:
// "(devel) revision 0123456789ab (modified)", "v1.2.3".
func (i Info) String() string {
	s := i.Version
	if i.Revision != "" {
		s += " revision " + i.Revision[:min(12, len(i.Revision))]
	}
	if i.Modified {
		s += " (modified)"
	}
	return s
}

// Describe is what `pi2hop version` prints: the version as String spells
// it (the lab report's spelling too), the commit in full, the module, the
// Go version and platform, a line each.
func (i Info) Describe() string {
	commit := i.Revision
	switch {
	case commit == "":
		// go build -buildvcs=false, or a build outside a git work tree.
		commit = "unknown (built without version control information)"
	case i.Modified:
		commit += " with uncommitted changes"
	}
	return fmt.Sprintf("pi2hop %s\ncommit %s\nmodule %s\ngo %s %s\n", i, commit, i.Module, i.Go, i.Platform)
}
