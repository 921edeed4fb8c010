package lan

import (
	"net"
	"net/netip"
	"reflect"
	"testing"
	"time"

	"github.com/insomniacslk/dhcp/dhcpv4"
)

var t0 = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

func mustMAC(s string) net.HardwareAddr {
	m, err := net.ParseMAC(s)
	if err != nil {
		panic(err)
	}
	return m
}

const (
	macA = "02:00:00:00:00:0a"
	macB = "02:00:00:00:00:0b"
	macC = "02:00:00:00:00:0c"
)

func testTable(t *testing.T, subnet string, leases ...Lease) *leaseTable {
	t.Helper()
	cfg := DHCPConfig{Iface: "lan0", Subnet: netip.MustParsePrefix(subnet), LeaseTime: time.Hour, Leases: leases}
	if err := cfg.fill(); err != nil {
		t.Fatal(err)
	}
	return newLeaseTable(cfg)
}

func discover(t *testing.T, mac string, mods ...dhcpv4.Modifier) *dhcpv4.DHCPv4 {
	t.Helper()
	m, err := dhcpv4.NewDiscovery(mustMAC(mac), mods...)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// request builds a REQUEST as a client sends it in each RFC 2131 state:
// SELECTING (server id + requested address), INIT-REBOOT (requested
// address only) or RENEWING (ciaddr only).
func request(t *testing.T, mac string, sid, asked, ciaddr string) *dhcpv4.DHCPv4 {
	t.Helper()
	mods := []dhcpv4.Modifier{dhcpv4.WithMessageType(dhcpv4.MessageTypeRequest), dhcpv4.WithHwAddr(mustMAC(mac)),
		dhcpv4.WithOption(dhcpv4.OptHostName("phone-" + mac[len(mac)-2:]))}
	if sid != "" {
		mods = append(mods, dhcpv4.WithOption(dhcpv4.OptServerIdentifier(net.ParseIP(sid))))
	}
	if asked != "" {
		mods = append(mods, dhcpv4.WithOption(dhcpv4.OptRequestedIPAddress(net.ParseIP(asked))))
	}
	if ciaddr != "" {
		mods = append(mods, dhcpv4.WithClientIP(net.ParseIP(ciaddr)))
	}
	m, err := dhcpv4.New(mods...)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// lease runs DISCOVER, OFFER, REQUEST, ACK for mac and returns the address.
func lease(t *testing.T, tb *leaseTable, mac string, now time.Time) string {
	t.Helper()
	off, _, err := tb.handle(discover(t, mac), now)
	if err != nil || off == nil || off.MessageType() != dhcpv4.MessageTypeOffer {
		t.Fatalf("DISCOVER from %s: reply %v, err %v", mac, off, err)
	}
	ack, changed, err := tb.handle(request(t, mac, tb.cfg.Router.String(), off.YourIPAddr.String(), ""), now)
	if err != nil || ack.MessageType() != dhcpv4.MessageTypeAck || !changed {
		t.Fatalf("REQUEST from %s: reply %v, changed %v, err %v", mac, ack, changed, err)
	}
	if !ack.YourIPAddr.Equal(off.YourIPAddr) {
		t.Fatalf("%s offered %v, acked %v", mac, off.YourIPAddr, ack.YourIPAddr)
	}
	return ack.YourIPAddr.String()
}

func TestOfferCarriesTheLAN(t *testing.T) {
	tb := testTable(t, "192.168.2.0/24")
	off, _, err := tb.handle(discover(t, macA), t0)
	if err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		what      string
		got, want any
	}{
		{"type", off.MessageType(), dhcpv4.MessageTypeOffer},
		{"op", off.OpCode, dhcpv4.OpcodeBootReply},
		{"yiaddr", off.YourIPAddr.String(), "192.168.2.2"}, // first after the box's .1
		{"server id", off.ServerIdentifier().String(), "192.168.2.1"},
		{"mask", net.IP(off.SubnetMask()).String(), "255.255.255.0"},
		{"router", off.Router()[0].String(), "192.168.2.1"},
		{"dns", off.DNS()[0].String(), "192.168.2.1"},
		{"broadcast", off.BroadcastAddress().String(), "192.168.2.255"},
		{"lease", off.IPAddressLeaseTime(0), time.Hour},
		{"T1", off.IPAddressRenewalTime(0), 30 * time.Minute},
		{"T2", off.IPAddressRebindingTime(0), 52*time.Minute + 30*time.Second},
	}
	for _, c := range checks {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("OFFER %s = %v, want %v", c.what, c.got, c.want)
		}
	}
}

func TestDistinctAddressesForDistinctClients(t *testing.T) {
	tb := testTable(t, "192.168.2.0/24")
	a, b := lease(t, tb, macA, t0), lease(t, tb, macB, t0)
	if a == b {
		t.Fatalf("two clients both got %s", a)
	}
	// Offers count too: C's pending offer is not handed to anyone else.
	offC, _, _ := tb.handle(discover(t, macC), t0)
	offD, _, _ := tb.handle(discover(t, "02:00:00:00:00:0d"), t0)
	for _, addr := range []string{a, b} {
		if offC.YourIPAddr.String() == addr || offD.YourIPAddr.String() == addr {
			t.Errorf("offered %v and %v, one of them already leased (%s, %s)", offC.YourIPAddr, offD.YourIPAddr, a, b)
		}
	}
	if offC.YourIPAddr.Equal(offD.YourIPAddr) {
		t.Errorf("two pending offers of %v", offC.YourIPAddr)
	}
}

func TestRenewalKeepsTheAddress(t *testing.T) {
	tb := testTable(t, "192.168.2.0/24")
	a := lease(t, tb, macA, t0)
	later := t0.Add(31 * time.Minute) // past T1
	ack, changed, err := tb.handle(request(t, macA, "", "", a), later)
	if err != nil || ack.MessageType() != dhcpv4.MessageTypeAck || ack.YourIPAddr.String() != a || !changed {
		t.Fatalf("renewal: %v changed %v err %v, want ACK of %s", ack, changed, err, a)
	}
	if got := tb.leases[macA].Expiry; !got.Equal(later.Add(time.Hour)) {
		t.Errorf("renewed lease expires %v, want %v", got, later.Add(time.Hour))
	}
	if d := replyDest(request(t, macA, "", "", a), ack); d.IP.String() != a {
		t.Errorf("renewal ACK sent to %v, want the client's %s by unicast (RFC 2131 4.1)", d, a)
	}
}

func TestRequestRules(t *testing.T) {
	tb := testTable(t, "192.168.2.0/24")
	a := lease(t, tb, macA, t0) // 192.168.2.2
	for _, c := range []struct {
		name                string
		mac, sid, asked, ci string
		want                dhcpv4.MessageType // 0: no reply
	}{
		{"another server's offer chosen", macB, "192.168.2.200", "192.168.2.3", "", 0},
		{"address leased to another", macB, "", a, "", dhcpv4.MessageTypeNak},
		{"address outside the subnet", macB, "", "10.0.0.5", "", dhcpv4.MessageTypeNak},
		{"the router's address", macB, "", "192.168.2.1", "", dhcpv4.MessageTypeNak},
		{"the broadcast address", macB, "", "192.168.2.255", "", dhcpv4.MessageTypeNak},
		{"init-reboot with a free address", macB, "", "192.168.2.77", "", dhcpv4.MessageTypeAck},
		{"init-reboot with its own address", macA, "", a, "", dhcpv4.MessageTypeAck},
	} {
		r, _, _ := tb.handle(request(t, c.mac, c.sid, c.asked, c.ci), t0)
		got := dhcpv4.MessageType(0)
		if r != nil {
			got = r.MessageType()
		}
		if got != c.want {
			t.Errorf("%s: reply %v, want %v", c.name, got, c.want)
		}
		if got == dhcpv4.MessageTypeNak && replyDest(request(t, c.mac, c.sid, c.asked, c.ci), r).IP.String() != "255.255.255.255" {
			t.Errorf("%s: NAK not broadcast", c.name)
		}
	}
}

func TestReloadedTableKeepsAddresses(t *testing.T) {
	var saved []Lease
	tb := testTable(t, "192.168.2.0/24")
	tb.cfg.OnChange = func(ls []Lease) { saved = ls }
	a, b := lease(t, tb, macA, t0), lease(t, tb, macB, t0)
	if len(tb.list()) != 2 {
		t.Fatalf("table %v, want two leases", tb.list())
	}
	saved = tb.list()
	// A restart a day later: both leases expired, B comes back first
	// and a stranger asks too; each returning device gets its own.
	next := testTable(t, "192.168.2.0/24", saved...)
	day := t0.Add(24 * time.Hour)
	stranger := lease(t, next, macC, day)
	if stranger == a || stranger == b {
		t.Errorf("a new client got %s, recorded for a returning device (%s, %s)", stranger, a, b)
	}
	if got := lease(t, next, macB, day); got != b {
		t.Errorf("after reload B got %s, want its %s", got, b)
	}
	if got := lease(t, next, macA, day); got != a {
		t.Errorf("after reload A got %s, want its %s", got, a)
	}
}

func TestSaveAndLoadLeases(t *testing.T) {
	path := t.TempDir() + "/d/leases.json"
	if ls, err := LoadLeases(path); err != nil || ls != nil {
		t.Fatalf("missing file: %v, %v; want an empty table", ls, err)
	}
	want := []Lease{{MAC: macA, Addr: netip.MustParseAddr("192.168.2.2"), Hostname: "phone", Expiry: t0}}
	if err := SaveLeases(path, want); err != nil {
		t.Fatal(err)
	}
	got, err := LoadLeases(path)
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("loaded %v, %v; want %v", got, err, want)
	}
}

func TestReleaseAndDecline(t *testing.T) {
	tb := testTable(t, "192.168.2.0/24")
	a := lease(t, tb, macA, t0)
	rel, _ := dhcpv4.New(dhcpv4.WithMessageType(dhcpv4.MessageTypeRelease), dhcpv4.WithHwAddr(mustMAC(macA)), dhcpv4.WithClientIP(net.ParseIP(a)))
	if _, changed, err := tb.handle(rel, t0.Add(time.Minute)); err != nil || !changed {
		t.Fatalf("RELEASE: changed %v err %v", changed, err)
	}
	if tb.leases[macA].Active(t0.Add(time.Minute)) {
		t.Error("released lease still active")
	}
	if got := lease(t, tb, macA, t0.Add(2*time.Minute)); got != a {
		t.Errorf("after release A got %s, want its %s back", got, a)
	}
	// B declines its offer: the address is out of the pool for a lease time.
	off, _, _ := tb.handle(discover(t, macB), t0)
	dec, _ := dhcpv4.New(dhcpv4.WithMessageType(dhcpv4.MessageTypeDecline), dhcpv4.WithHwAddr(mustMAC(macB)),
		dhcpv4.WithOption(dhcpv4.OptRequestedIPAddress(off.YourIPAddr)))
	tb.handle(dec, t0)
	off2, _, _ := tb.handle(discover(t, macB), t0.Add(time.Second))
	if off2.YourIPAddr.Equal(off.YourIPAddr) {
		t.Errorf("declined %v offered again", off.YourIPAddr)
	}
}

func TestFullPoolReclaimsTheOldestExpiredLease(t *testing.T) {
	// A /29 has 6 host addresses: .1 the box, .2-.6 for devices.
	tb := testTable(t, "10.9.0.0/29")
	var got []string
	for i := 0; i < 5; i++ {
		mac := net.HardwareAddr{2, 0, 0, 0, 1, byte(i)}.String()
		got = append(got, lease(t, tb, mac, t0.Add(time.Duration(i)*time.Minute)))
	}
	if want := []string{"10.9.0.2", "10.9.0.3", "10.9.0.4", "10.9.0.5", "10.9.0.6"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("leases %v, want %v", got, want)
	}
	if r, _, _ := tb.handle(discover(t, macC), t0.Add(30*time.Minute)); r != nil {
		t.Errorf("full pool offered %v", r.YourIPAddr)
	}
	// All expired: the first lease (expired longest ago) goes to C.
	if a := lease(t, tb, macC, t0.Add(2*time.Hour)); a != "10.9.0.2" {
		t.Errorf("reclaimed %s, want 10.9.0.2", a)
	}
}

func TestIgnoredMessages(t *testing.T) {
	tb := testTable(t, "192.168.2.0/24")
	relayed := discover(t, macA, dhcpv4.WithGatewayIP(net.ParseIP("10.1.1.1")))
	reply := discover(t, macA)
	reply.OpCode = dhcpv4.OpcodeBootReply
	for name, m := range map[string]*dhcpv4.DHCPv4{"relayed": relayed, "a reply": reply} {
		if r, _, err := tb.handle(m, t0); r != nil || err == nil {
			t.Errorf("%s: reply %v, err %v; want ignored with a reason", name, r, err)
		}
	}
}

func TestDHCPConfigErrors(t *testing.T) {
	for _, c := range []DHCPConfig{
		{Subnet: netip.MustParsePrefix("fd00::/64")},
		{Subnet: netip.MustParsePrefix("192.168.2.0/31")},
		{Subnet: netip.MustParsePrefix("192.168.2.0/24"), Router: netip.MustParseAddr("192.168.3.1")},
		{Subnet: netip.MustParsePrefix("192.168.2.0/24"), LeaseTime: time.Second},
	} {
		if err := c.fill(); err == nil {
			t.Errorf("config %+v accepted", c)
		}
	}
}

func TestOffersRunOut(t *testing.T) {
	tb := testTable(t, "192.168.2.0/24")
	for i := 0; i < 50; i++ {
		tb.handle(discover(t, net.HardwareAddr{2, 0, 0, 0, 2, byte(i)}.String()), t0)
	}
	if len(tb.offers) != 50 {
		t.Fatalf("%d offers pending, want 50", len(tb.offers))
	}
	// Past offerHold nobody took them: the next message prunes them, and
	// the lowest address is free again.
	if a := lease(t, tb, macA, t0.Add(offerHold)); a != "192.168.2.2" || len(tb.offers) != 0 {
		t.Errorf("after the offers ran out: leased %s with %d offers left, want 192.168.2.2 and none", a, len(tb.offers))
	}
}
