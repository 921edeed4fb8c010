package statefile

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

func TestWriteJSON(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run", "pi2hop")
	path := filepath.Join(dir, "x.json")
	for _, v := range []map[string]int{{"a": 1}, {"b": 2}} { // the second replaces the first
		if err := WriteJSON(path, v); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]int
	if err := json.Unmarshal(b, &got); err != nil || len(got) != 1 || got["b"] != 2 {
		t.Errorf("file holds %q (%v), want {\"b\": 2}", b, err)
	}
	for p, want := range map[string]os.FileMode{path: 0o600, dir: 0o700} {
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s: mode %v (%v), want %v", p, fi.Mode().Perm(), err, want)
		}
	}
	if _, err := os.Stat(path + ".tmp"); !os.IsNotExist(err) {
		t.Errorf("temporary file left behind: %v", err)
	}
}
