package analyze

import (
	"path/filepath"
	"testing"
)

// A direction's name becomes one harmless path element of a plot's name.
func TestFileSafe(t *testing.T) {
	for in, want := range map[string]string{
		"up": "up", "l4s.up": "l4s.up", "..": "_..", ".": "_.", "": "_", "../../etc/x": "_.._.._etc_x", "a/b": "a_b", ".hidden": "_.hidden",
	} {
		got := fileSafe(in)
		if got != want || filepath.Base(got) != got || got == "." || got == ".." {
			t.Errorf("fileSafe(%q) = %q, want %q", in, got, want)
		}
	}
}
