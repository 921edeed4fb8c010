package instance

import (
	"net/netip"
	"strings"
	"testing"
	"time"

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
