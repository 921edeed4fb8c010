//go:build unix

package brokenstdio

import (
	"os"
	"testing"
)

// A pipe is broken for its writer once its read end is closed, not
// before.
func TestBroken(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	fd := int(w.Fd())
	if broken(fd) {
		t.Error("pipe with a reader: broken")
	}
	r.Close()
	if !broken(fd) {
		t.Error("pipe without a reader: not broken")
	}
}
