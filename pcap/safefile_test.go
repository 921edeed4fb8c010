package pcap

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/pcap/pcaptest"
)

// A planted FILE.1 symlink is refused at rotation with an error naming
// it, and what it points to is untouched; the capture up to then is
// complete.
func TestCaptureRotationRefusesPlantedLink(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "cap.pcapng")
	target := filepath.Join(dir, "victim")
	if err := os.WriteFile(target, []byte("precious"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, path+".1"); err != nil {
		t.Fatal(err)
	}
	c, err := NewCapture(path, Options{MaxSize: 8192, BufferRecords: 4096})
	if err != nil {
		t.Fatal(err)
	}
	taps := c.AddTaps("up")
	pkt := pcaptest.Packet{Src: pcaptest.Cli4, Dst: pcaptest.Srv4, Proto: 6, Payload: 1000}.Build()
	ann := &Annotation{HasDecision: true, Verdict: aqm.Verdict{Action: aqm.Pass}}
	for i := range 300 {
		c.OfferWait(taps.Out, int64(i)*1000, pkt, 0, ann)
	}
	err = c.Close()
	if err == nil || !strings.Contains(err.Error(), path+".1") {
		t.Fatalf("Close after rotating onto a planted link: %v, want an error naming %s.1", err, path)
	}
	if b, _ := os.ReadFile(target); string(b) != "precious" {
		t.Errorf("the link's target was written: %q", b)
	}
	if pkts, _ := readAll(t, path); len(pkts) == 0 {
		t.Errorf("the first file holds no packets")
	}
}

// A capture is never opened over an existing file, and its files are
// the owner's alone (0600).
func TestCaptureIsNewAndPrivate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cap.pcapng")
	c, err := NewCapture(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("capture mode %v (%v), want 0600", fi.Mode().Perm(), err)
	}
	if _, err := NewCapture(path, Options{}); err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("a second capture over %s: %v, want an error naming it", path, err)
	}
}
