package instance

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/hop"
	"github.com/pi2hop/pi2hop/lan"
)

func TestWriteClients(t *testing.T) {
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	cs := []lan.Client{
		{Lease: lan.Lease{MAC: "02:00:00:00:00:0a", Addr: netip.MustParseAddr("192.168.2.2"), Hostname: "phone", Expiry: now.Add(59*time.Minute + 30*time.Second)},
			Addrs6: []netip.Addr{netip.MustParseAddr("fd00::a")}, Up: 1_520_000, Down: 227_280_000},
		{Lease: lan.Lease{MAC: "02:00:00:00:00:0b", Addr: netip.MustParseAddr("192.168.2.3"), Expiry: now.Add(-time.Minute)}, Up: 999, Down: 1500},
		{Lease: lan.Lease{Addr: netip.MustParseAddr("fd00::77")}, Addrs6: []netip.Addr{netip.MustParseAddr("fd00::77")}, Down: 64},
	}
	var b strings.Builder
	WriteClients(&b, ClientViews(cs, now))
	want := `clients
  mac                address      host   lease        up       down       ipv6
  02:00:00:00:00:0a  192.168.2.2  phone  59m30s left  1.52 MB  227.28 MB  fd00::a
  02:00:00:00:00:0b  192.168.2.3  -      expired      999 B    1.5 kB     -
  -                  fd00::77     -      -            0 B      64 B       fd00::77
`
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
	b.Reset()
	WriteClients(&b, nil)
	if b.Len() != 0 {
		t.Errorf("no clients printed %q, want nothing (run and shell have none)", b.String())
	}
}

// A direction's link line says how busy the link and the queue were, and
// the warning follows it when the hop is not the bottleneck: 8.4 Mbit/s
// through a 100 Mbit/s link over 12 s of 100 (busy 8.4 %, a packet
// waiting 0.3 % of the time).
func TestWriteDirRowNotBottleneck(t *testing.T) {
	s := hop.DirStats{Dir: hop.Up, Kind: "dualpi2", Bps: 100_000_000, Elapsed: 12e9,
		OutBytes: 12_600_000, NotBottleneck: true, PathBps: 8.4e6}
	s.Link.Busy, s.Link.Queued = 1_008_000_000, 36_000_000
	v := s.Row(nil)
	if v.NotBottleneck != "not the bottleneck: the path is limited elsewhere at about 8.4 Mbit/s" {
		t.Errorf("not_bottleneck %q", v.NotBottleneck)
	}
	var b strings.Builder
	WriteDirRow(&b, &v)
	want := " link: 8.4mbit out over 12.0s, utilisation 8.4%, queue not empty 0.3%\n  warning: not the bottleneck: the path is limited elsewhere at about 8.4 Mbit/s\n"
	if !strings.Contains(b.String(), want) {
		t.Errorf("stats lack\n%s\nin\n%s", want, b.String())
	}
	s.NotBottleneck = false
	v = s.Row(nil)
	b.Reset()
	WriteDirRow(&b, &v)
	if strings.Contains(b.String(), "warning") || v.NotBottleneck != "" {
		t.Errorf("a bottleneck hop warned: %q\n%s", v.NotBottleneck, b.String())
	}
}

// stats says its alpha and beta are tc's read-back and shows the gains
// as set beside them; a kind without them says nothing of the sort.
func TestWriteDirRowGains(t *testing.T) {
	s := hop.DirStats{Dir: hop.Up, Kind: aqm.KindDualPI2, Spec: aqm.Spec{Kind: aqm.KindDualPI2, DualPI2: aqm.DefaultConfig()}}
	v := s.Row(nil)
	var b strings.Builder
	WriteDirRow(&b, &v)
	for _, want := range []string{" alpha 0.156250 beta 3.195312 ",
		"\n  (alpha, beta: tc's rounded read-back of the kernel's internal scaling of the 0.16015625 and 3.19921875 Hz set)\n"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("%q not in\n%s", want, b.String())
		}
	}
	s = hop.DirStats{Dir: hop.Up, Kind: aqm.KindCoDel, Spec: aqm.Spec{Kind: aqm.KindCoDel, CoDel: aqm.DefaultCodelConfig()}}
	v = s.Row(nil)
	b.Reset()
	WriteDirRow(&b, &v)
	if strings.Contains(b.String(), "read-back") {
		t.Errorf("codel:\n%s", b.String())
	}
}
