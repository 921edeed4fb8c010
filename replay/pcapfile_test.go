package replay

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pi2hop/pi2hop/invoker"
)

// CreatePcap's file holds the classic pcap header once closed (24 bytes,
// the nanosecond magic a1b23c4d); a path that cannot be created fails
// with the caller's name first.
func TestCreatePcap(t *testing.T) {
	dir := t.TempDir()
	owner, err := invoker.FromEnv()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "out.pcap")
	w, err := CreatePcap(path, owner, 0, "--pcap-out")
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) != 24 || binary.LittleEndian.Uint32(b) != 0xa1b23c4d {
		t.Errorf("file of %d bytes starting % x; want the 24-byte ns pcap header", len(b), b[:min(len(b), 4)])
	}
	if err := w.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	_, err = CreatePcap(filepath.Join(dir, "no", "such", "dir.pcap"), owner, 0, "--pcap-out")
	if err == nil || !strings.HasPrefix(err.Error(), "--pcap-out: ") {
		t.Errorf("uncreatable path: %v, want an error starting --pcap-out: ", err)
	}
}
