package testbed

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A buffer or a plain file is not a terminal: the progress prints line
// by line, with no width to fit.
func TestTerminalProgressOnNonTerminals(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "log"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for name, w := range map[string]io.Writer{"buffer": &bytes.Buffer{}, "file": f} {
		p := NewTerminalProgress(w, time.Minute)
		if p.tty || p.width != 0 || p.total != time.Minute {
			t.Errorf("%s: tty %v width %d total %v; want false, 0, 1m", name, p.tty, p.width, p.total)
		}
	}
}
