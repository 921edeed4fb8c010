package netsys

import (
	"bufio"
	"io"
	"net"
	"net/netip"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pi2hop/pi2hop/internal/roottest"
)

// natTopology builds dev -- box -- inet: the device's subnet is not routed
// in inet, so only a masqueraded packet gets an answer there.
type natTopology struct {
	dev, box, inet string
	wan            string // box's device towards inet
}

var (
	natDevAddr4 = netip.MustParsePrefix("10.77.1.2/24")
	natLAN4     = netip.MustParsePrefix("10.77.1.1/24")
	natWAN4     = netip.MustParsePrefix("10.77.2.1/24")
	natInet4    = netip.MustParsePrefix("10.77.2.2/24")
	natDevAddr6 = netip.MustParsePrefix("fd77:1::2/64")
	natLAN6     = netip.MustParsePrefix("fd77:1::1/64")
	natWAN6     = netip.MustParsePrefix("fd77:2::1/64")
	natInet6    = netip.MustParsePrefix("fd77:2::2/64")
)

func newNATTopology(t *testing.T, j *Journal) natTopology {
	t.Helper()
	base := roottest.Name("p2t")
	n := natTopology{dev: base + "d", box: base + "b", inet: base + "i", wan: "wan0"}
	for _, ns := range []string{n.dev, n.box, n.inet} {
		if err := j.NewNamespace(ns); err != nil {
			t.Fatal(err)
		}
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(j.AddVeth(n.box, "lan0", n.dev, "eth0"))
	must(j.AddVeth(n.box, n.wan, n.inet, "eth0"))
	for _, a := range []struct {
		ns, dev string
		p       netip.Prefix
	}{
		{n.dev, "eth0", natDevAddr4}, {n.dev, "eth0", natDevAddr6},
		{n.box, "lan0", natLAN4}, {n.box, "lan0", natLAN6},
		{n.box, n.wan, natWAN4}, {n.box, n.wan, natWAN6},
		{n.inet, "eth0", natInet4}, {n.inet, "eth0", natInet6},
	} {
		must(j.AddAddr(a.ns, a.dev, a.p))
	}
	must(j.AddRoute(n.dev, Route{Dst: netip.MustParsePrefix("0.0.0.0/0"), Dev: "eth0", Gw: natLAN4.Addr()}))
	must(j.AddRoute(n.dev, Route{Dst: netip.MustParsePrefix("::/0"), Dev: "eth0", Gw: natLAN6.Addr()}))
	must(j.SetSysctl(n.box, "net/ipv4/ip_forward", "1"))
	must(j.SetSysctl(n.box, "net/ipv6/conf/all/forwarding", "1"))
	return n
}

// seenFrom connects from the device to a TCP server in inet at dst and
// returns the source address the server saw; the connection must be up
// within timeout.
func seenFrom(t *testing.T, n natTopology, dst netip.Addr, timeout time.Duration) (netip.Addr, error) {
	t.Helper()
	var ln net.Listener
	if err := Do(n.inet, func() error {
		var err error
		ln, err = net.Listen("tcp", netip.AddrPortFrom(dst, 0).String())
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	seen := make(chan netip.Addr, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		ap := c.RemoteAddr().(*net.TCPAddr).AddrPort()
		c.Write([]byte(ap.Addr().Unmap().String() + "\n"))
		seen <- ap.Addr().Unmap()
	}()
	var c net.Conn
	err := Do(n.dev, func() error {
		var err error
		c, err = net.DialTimeout("tcp", ln.Addr().String(), timeout)
		return err
	})
	if err != nil {
		return netip.Addr{}, err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(3 * time.Second))
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return netip.Addr{}, err
	}
	select {
	case a := <-seen:
		if a.String() != strings.TrimSpace(line) {
			t.Errorf("server saw %v, told the device %q", a, line)
		}
		return a, nil
	case <-time.After(3 * time.Second):
		t.Fatal("server accepted no connection within 3 s")
	}
	return netip.Addr{}, nil
}

func TestMasqueradeOutOfWAN(t *testing.T) {
	roottest.Need(t)
	j := NewJournal(nil)
	t.Cleanup(func() { j.Undo() })
	n := newNATTopology(t, j)

	// Without NAT the answer has no way back to the device's subnet.
	if _, err := seenFrom(t, n, natInet4.Addr(), time.Second); err == nil {
		t.Fatal("device reached inet without masquerade: the topology does not test NAT")
	}

	nat := NewJournal(nil)
	t.Cleanup(func() { nat.Undo() })
	if err := nat.AddMasqueradeOut(n.box, "p2t-nat", n.wan, natLAN4.Masked(), natLAN6.Masked()); err != nil {
		t.Fatal(err)
	}
	if ok, err := NftTableExists(n.box, "p2t-nat"); err != nil || !ok {
		t.Fatalf("table after AddMasqueradeOut: exists %v, err %v", ok, err)
	}
	if ok, _ := NftTableExists("", "p2t-nat"); ok {
		t.Errorf("table p2t-nat appeared in the host's namespace")
	}
	for _, c := range []struct{ dst, want netip.Addr }{
		{natInet4.Addr(), natWAN4.Addr()},
		{natInet6.Addr(), natWAN6.Addr()},
	} {
		got, err := seenFrom(t, n, c.dst, 3*time.Second)
		if err != nil {
			t.Errorf("device to %v through masquerade: %v", c.dst, err)
			continue
		}
		if got != c.want {
			t.Errorf("server %v saw the device as %v, want the box's WAN address %v", c.dst, got, c.want)
		}
	}

	if err := nat.Undo(); err != nil {
		t.Fatalf("undo: %v", err)
	}
	if ok, err := NftTableExists(n.box, "p2t-nat"); err != nil || ok {
		t.Errorf("table after undo: exists %v, err %v", ok, err)
	}
	// A table already gone is not an error (a second cleanup).
	if err := UndoEntries([]Entry{{Kind: KindNftTable, NS: n.box, Name: "p2t-nat"}}); err != nil {
		t.Errorf("undo of a missing table: %v", err)
	}
}

func TestMasqueradeOnlyOutOfItsDevice(t *testing.T) {
	roottest.Need(t)
	j := NewJournal(nil)
	t.Cleanup(func() { j.Undo() })
	n := newNATTopology(t, j)
	// Masquerading out of a device the traffic does not leave by must not
	// translate it.
	if err := j.AddMasqueradeOut(n.box, "p2t-nat", "lan0", natLAN4.Masked()); err != nil {
		t.Fatal(err)
	}
	if _, err := seenFrom(t, n, natInet4.Addr(), time.Second); err == nil {
		t.Error("device reached inet although only traffic out of lan0 is masqueraded")
	}
}

func TestMasqueradeBadInput(t *testing.T) {
	j := NewJournal(nil)
	for _, c := range []struct {
		name, oif string
		srcs      []netip.Prefix
		want      string
	}{
		{"9bad", "", []netip.Prefix{natLAN4}, "table name"},
		{"ok", "a-device-name-too-long", []netip.Prefix{natLAN4}, "at most 15 bytes"},
		{"ok", "", nil, "no source prefix"},
		{"ok", "", []netip.Prefix{{}}, "want ADDR/LEN"},
	} {
		err := j.AddMasqueradeOut("", c.name, c.oif, c.srcs...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("AddMasqueradeOut(%q, %q, %v) = %v, want an error with %q", c.name, c.oif, c.srcs, err, c.want)
		}
	}
	if len(j.Entries()) != 0 {
		t.Errorf("refused input left %v on record", j.Entries())
	}
}

// transfer sends up bytes from the device to a TCP server in inet at
// dst, which then sends down bytes back, and waits for both.
func transfer(t *testing.T, n natTopology, dst netip.Addr, up, down int) {
	t.Helper()
	var ln net.Listener
	if err := Do(n.inet, func() (err error) { ln, err = net.Listen("tcp", netip.AddrPortFrom(dst, 0).String()); return }); err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	srv := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			srv <- err
			return
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := io.ReadFull(c, make([]byte, up)); err != nil {
			srv <- err
			return
		}
		_, err = c.Write(make([]byte, down))
		srv <- err
	}()
	var c net.Conn
	if err := Do(n.dev, func() (err error) { c, err = net.DialTimeout("tcp", ln.Addr().String(), 3*time.Second); return }); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write(make([]byte, up)); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(c, make([]byte, down)); err != nil {
		t.Fatalf("download of %d bytes: %v", down, err)
	}
	if err := <-srv; err != nil {
		t.Fatalf("server side: %v", err)
	}
}

func TestNATCountsBytesPerClient(t *testing.T) {
	roottest.Need(t)
	j := NewJournal(nil)
	t.Cleanup(func() { j.Undo() })
	n := newNATTopology(t, j)
	if err := j.AddNAT(n.box, NAT{Table: "p2t-nat", Out: n.wan, Sources: []netip.Prefix{natLAN4.Masked(), natLAN6.Masked()}, CountLAN: "lan0"}); err != nil {
		t.Fatal(err)
	}
	const up, down = 100_000, 300_000
	transfer(t, n, natInet4.Addr(), up, down)
	transfer(t, n, natInet6.Addr(), up/2, down/2)
	got, err := ClientBytes(n.box, "p2t-nat")
	if err != nil {
		t.Fatal(err)
	}
	// Counted at the IP layer: the payload plus at most 10 % of headers,
	// handshake and acknowledgements (TCP/IP headers with timestamps are
	// 52-72 bytes per segment of up to 1448).
	for _, c := range []struct {
		addr     netip.Addr
		up, down int
	}{{natDevAddr4.Addr(), up, down}, {natDevAddr6.Addr(), up / 2, down / 2}} {
		b := got[c.addr]
		if b.Up < uint64(c.up) || b.Up > uint64(c.up)*11/10 || b.Down < uint64(c.down) || b.Down > uint64(c.down)*11/10 {
			t.Errorf("%v: up %d down %d bytes, want %d..%d up and %d..%d down", c.addr, b.Up, b.Down, c.up, c.up*11/10, c.down, c.down*11/10)
		}
	}
	t.Logf("counted: %v", got)
	if len(got) != 2 {
		t.Errorf("counted addresses %v, want only the device's two", got)
	}
}

// A process killed with its table in place leaves a state file; a later
// cleanup (`--cleanup`) undoes the table from the file alone.
func TestNATTableUndoneFromTheStateFile(t *testing.T) {
	roottest.Need(t)
	outer := NewJournal(nil)
	t.Cleanup(func() { outer.Undo() })
	ns := roottest.Name("p2t")
	if err := outer.NewNamespace(ns); err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(t.TempDir(), "state.json")
	j := NewJournal(SaveFile(state))
	if err := j.AddNAT(ns, NAT{Table: "p2t-left", Sources: []netip.Prefix{natLAN4.Masked()}, CountLAN: "lo"}); err != nil {
		t.Fatal(err)
	}
	es, err := LoadFile(state)
	if err != nil || len(es) != 1 || es[0].Kind != KindNftTable {
		t.Fatalf("state file: %v, %v; want the one table", es, err)
	}
	if err := UndoEntries(es); err != nil {
		t.Fatal(err)
	}
	if ok, err := NftTableExists(ns, "p2t-left"); err != nil || ok {
		t.Errorf("table after cleanup from the state file: exists %v, err %v", ok, err)
	}
}
