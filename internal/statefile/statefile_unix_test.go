//go:build unix

package statefile

import (
	"os"
	"path/filepath"
	"testing"
)

// A symlink planted at the temporary name is not followed.
func TestWriteJSONRefusesSymlink(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "victim")
	if err := os.WriteFile(target, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "x.json")
	if err := os.Symlink(target, path+".tmp"); err != nil {
		t.Fatal(err)
	}
	if err := WriteJSON(path, 1); err == nil {
		t.Error("WriteJSON followed a symlink at its temporary file")
	}
	if b, _ := os.ReadFile(target); string(b) != "keep" {
		t.Errorf("symlink target overwritten: %q", b)
	}
}
