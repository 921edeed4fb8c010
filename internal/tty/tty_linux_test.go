package tty

import (
	"bytes"
	"io"
	"os"
	"testing"
)

func TestIsTerminal(t *testing.T) {
	ptm, pts, err := OpenPTY()
	if err != nil {
		t.Fatal(err)
	}
	defer ptm.Close()
	defer pts.Close()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	f, err := os.CreateTemp(t.TempDir(), "f")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, tt := range []struct {
		name string
		w    io.Writer
		want bool
	}{{"pty", pts, true}, {"pipe", w, false}, {"file", f, false}, {"buffer", new(bytes.Buffer), false}} {
		if got := IsTerminal(tt.w); got != tt.want {
			t.Errorf("%s: IsTerminal %v, want %v", tt.name, got, tt.want)
		}
	}
}
