package buildinfo

import (
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

func TestFromAndString(t *testing.T) {
	for _, tc := range []struct {
		name string
		bi   *debug.BuildInfo
		want string
		mod  string
	}{
		{"no build information", nil, "(unknown)", "github.com/pi2hop/pi2hop"},
		{"a tagged module", &debug.BuildInfo{Main: debug.Module{Path: "example.com/x", Version: "v1.2.3"}}, "v1.2.3", "example.com/x"},
		{"a work tree with changes",
			&debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
				{Key: "vcs.revision", Value: "0123456789abcdef0123456789abcdef01234567"}, {Key: "vcs.modified", Value: "true"}}},
			"(devel) revision 0123456789ab (modified)", "github.com/pi2hop/pi2hop"},
		{"a short revision, clean",
			&debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
				{Key: "vcs.revision", Value: "abc123"}, {Key: "vcs.modified", Value: "false"}}},
			"(devel) revision abc123", "github.com/pi2hop/pi2hop"},
	} {
		info := From(tc.bi)
		if got := info.String(); got != tc.want {
			t.Errorf("%s: String() = %q, want %q", tc.name, got, tc.want)
		}
		if info.Module != tc.mod || info.Go != runtime.Version() || info.Platform != runtime.GOOS+"/"+runtime.GOARCH {
			t.Errorf("%s: %+v", tc.name, info)
		}
	}
}

// Describe gives the full commit and says when there is none.
func TestDescribe(t *testing.T) {
	info := Info{Module: "m", Version: "v1", Revision: "0123456789abcdef", Go: "go1", Platform: "linux/amd64"}
	if got, want := info.Describe(), "pi2hop v1 revision 0123456789ab\ncommit 0123456789abcdef\nmodule m\ngo go1 linux/amd64\n"; got != want {
		t.Errorf("Describe() = %q, want %q", got, want)
	}
	info.Revision = ""
	if got, want := info.Describe(), "commit unknown (built without version control information)\n"; !strings.Contains(got, want) {
		t.Errorf("Describe() = %q, want %q in it", got, want)
	}
}
