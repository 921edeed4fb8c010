package tuntest

import (
	"errors"
	"os"
	"testing"

	"github.com/pi2hop/pi2hop/tun"
)

var _ tun.Device = (*ChannelDevice)(nil)

func TestChannelDeviceRoundTrip(t *testing.T) {
	d, err := NewChannelDevice("test0", 1500, 8)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"a", "bb", "ccc"} {
		d.Inject([]byte(p))
	}
	bufs := [][]byte{make([]byte, 16), make([]byte, 16)}
	sizes := make([]int, 2)
	n, err := d.Read(bufs, sizes)
	if n != 2 || err != nil || string(bufs[1][:sizes[1]]) != "bb" {
		t.Fatalf("Read = %d, %v, second %q; want 2 packets", n, err, bufs[1][:sizes[1]])
	}
	n, err = d.TryRead(bufs, sizes)
	if n != 1 || err != nil || string(bufs[0][:sizes[0]]) != "ccc" {
		t.Fatalf("TryRead = %d, %v; want the third packet", n, err)
	}
	if n, err = d.TryRead(bufs, sizes); n != 0 || err != nil {
		t.Fatalf("TryRead on empty = %d, %v; want 0, nil", n, err)
	}
	if _, err := d.Write([][]byte{[]byte("out")}); err != nil {
		t.Fatal(err)
	}
	if got := <-d.Outbound; string(got) != "out" {
		t.Errorf("Outbound = %q", got)
	}
	d.Close()
	d.Close()
	if _, err := d.Read(bufs, sizes); !errors.Is(err, os.ErrClosed) {
		t.Errorf("Read after Close = %v", err)
	}
	if d.Inject([]byte("x")) {
		t.Errorf("Inject after Close succeeded")
	}
}
