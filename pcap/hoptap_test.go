package pcap

import (
	"testing"

	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/pcap/pcaptest"
	"github.com/pi2hop/pi2hop/shaper"
)

// A HopTap adds six interfaces under its prefix, one per direction and
// point, and ignores a dir or point it did not make instead of crashing
// on the hot path.
func TestHopTapInterfacesAndBounds(t *testing.T) {
	c, err := NewCapture(t.TempDir()+"/t.pcapng", Options{Snaplen: 64})
	if err != nil {
		t.Fatal(err)
	}
	tap := NewHopTap(c, "x.")
	pkt := pcaptest.Packet{Src: pcaptest.Cli4, Dst: pcaptest.Srv4, Proto: 17}.Build()
	ev := &shaper.Event{Verdict: aqm.Verdict{Action: aqm.Drop}}
	tap.Packet(1, 2, 5, pkt, ev)  // down-drop
	tap.Packet(0, 0, 6, pkt, nil) // up-in
	for _, bad := range [][2]int{{2, 0}, {-1, 0}, {0, 3}, {0, -1}} {
		tap.Packet(bad[0], bad[1], 7, pkt, ev)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	want := []InterfaceStats{{Name: "x.up-in", Written: 1}, {Name: "x.up-out"}, {Name: "x.up-drop"},
		{Name: "x.down-in"}, {Name: "x.down-out"}, {Name: "x.down-drop", Written: 1}}
	got := c.Stats()
	if len(got) != len(want) {
		t.Fatalf("interfaces %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("interface %d: %+v, want %+v", i, got[i], want[i])
		}
	}
}
