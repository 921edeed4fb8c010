package lan

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/pi2hop/pi2hop/internal/roottest"
	"github.com/pi2hop/pi2hop/netsys"
	"github.com/vishvananda/netlink"
)

var (
	boxWAN6   = netip.MustParsePrefix("fd78::1/64")
	inetAddr6 = netip.MustParsePrefix("fd78::2/64")
)

// withWAN6 gives the box's WAN IPv6 and default routes towards inet.
func withWAN6(t *testing.T, n lanTopology) {
	t.Helper()
	j := netsys.NewJournal(nil)
	t.Cleanup(func() { j.Undo() })
	for _, err := range []error{
		j.AddAddr(n.box, "wan0", boxWAN6),
		j.AddAddr(n.inet, "eth0", inetAddr6),
		j.AddRoute(n.box, netsys.Route{Dst: netip.MustParsePrefix("::/0"), Dev: "wan0", Gw: inetAddr6.Addr()}),
		j.AddRoute(n.box, netsys.Route{Dst: netip.MustParsePrefix("0.0.0.0/0"), Dev: "wan0", Gw: inetAddr.Addr()}),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
}

// inetDNS serves DNS in namespace ns at addr, port 53, over UDP and TCP
// until t ends: every name is 10.66.0.7. asked, if not nil, hears of each
// question: the name, whether it came over TCP, and who asked.
func inetDNS(t *testing.T, ns string, addr netip.Addr, asked chan<- string) {
	t.Helper()
	h := dns.HandlerFunc(func(w dns.ResponseWriter, r *dns.Msg) {
		if asked != nil {
			_, tcp := w.LocalAddr().(*net.TCPAddr)
			asked <- fmt.Sprintf("%s tcp=%v from=%v", r.Question[0].Name, tcp, w.RemoteAddr())
		}
		m := new(dns.Msg)
		m.SetReply(r)
		rr, _ := dns.NewRR(r.Question[0].Name + " 300 IN A 10.66.0.7")
		m.Answer = []dns.RR{rr}
		w.WriteMsg(m)
	})
	at := netip.AddrPortFrom(addr, 53).String()
	var pc net.PacketConn
	var ln net.Listener
	inNS(t, ns, func() (err error) {
		if pc, err = net.ListenPacket("udp", at); err != nil {
			return err
		}
		ln, err = net.Listen("tcp", at)
		return err
	})
	for _, s := range []*dns.Server{{PacketConn: pc, Handler: h}, {Listener: ln, Handler: h}} {
		go s.ActivateAndServe()
		t.Cleanup(func() { s.Shutdown() })
	}
}

// inetServers starts, in inet, a DNS server for names under test. (UDP
// and TCP on port 53) and a TCP server on port 8080 that sends 200 kB to
// whoever connects and reports the address it saw.
func inetServers(t *testing.T, n lanTopology) (seen chan netip.Addr) {
	t.Helper()
	seen = make(chan netip.Addr, 4)
	for _, a := range []netip.Addr{inetAddr.Addr(), inetAddr6.Addr()} {
		inetDNS(t, n.inet, a, nil)
		var web net.Listener
		inNS(t, n.inet, func() (err error) {
			web, err = net.Listen("tcp", netip.AddrPortFrom(a, 8080).String())
			return err
		})
		t.Cleanup(func() { web.Close() })
		go func() {
			for {
				c, err := web.Accept()
				if err != nil {
					return
				}
				seen <- c.RemoteAddr().(*net.TCPAddr).AddrPort().Addr().Unmap()
				c.SetDeadline(time.Now().Add(5 * time.Second))
				c.Write(make([]byte, 200_000))
				c.Close()
			}
		}()
	}
	return seen
}

func resolve(t *testing.T, ns, network string, server netip.Addr, name string) string {
	t.Helper()
	c, err := dialIn(ns)(context.Background(), network, netip.AddrPortFrom(server, 53).String())
	if err != nil {
		t.Fatalf("device: dial DNS %v over %s: %v", server, network, err)
	}
	defer c.Close()
	m := new(dns.Msg)
	m.SetQuestion(name, dns.TypeA)
	r, _, err := (&dns.Client{Net: network, Timeout: 3 * time.Second}).ExchangeWithConn(m, &dns.Conn{Conn: c})
	if err != nil || len(r.Answer) != 1 {
		t.Fatalf("device: %s %s via %v: %v %v", network, name, server, r, err)
	}
	return r.Answer[0].(*dns.A).A.String()
}

func download(t *testing.T, ns string, dst netip.Addr) int {
	t.Helper()
	c, err := dialIn(ns)(context.Background(), "tcp", netip.AddrPortFrom(dst, 8080).String())
	if err != nil {
		t.Fatalf("device: connect to %v: %v", dst, err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	b, err := io.ReadAll(c)
	if err != nil {
		t.Fatalf("device: download from %v: %v", dst, err)
	}
	return len(b)
}

func TestShareServesADevice(t *testing.T) {
	roottest.Need(t, "udhcpc", "ip")
	n := newLANTopology(t, true)
	withWAN6(t, n)
	seen := inetServers(t, n)
	fwdBefore, _ := netsys.ReadSysctl(n.box, "net/ipv4/ip_forward")

	j := netsys.NewJournal(nil)
	undone := false
	t.Cleanup(func() {
		if !undone {
			j.Undo()
		}
	})
	sh, err := StartShare(j, ShareConfig{NS: n.box, LAN: "br0", WAN: "wan0", Table: "p2l-share",
		DNS: []netip.AddrPort{netip.MustParseAddrPort("10.78.0.2:53")}, ProbeWait: time.Second, RAInterval: 1800 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	t.Cleanup(func() {
		if !closed {
			sh.Close()
		}
	})
	// The Mac's range, free in this box; the box is .1.
	if sh.Subnet.String() != "192.168.2.0/24" || sh.Router.String() != "192.168.2.1" || !sh.ULA.IsValid() {
		t.Fatalf("share on %v router %v ULA %v; want 192.168.2.0/24, .1 and a ULA (the WAN has IPv6)", sh.Subnet, sh.Router, sh.ULA)
	}

	c := startClient(t, n.a, "phone")
	e := c.waitEvent(t, "bound", 1, 5*time.Second)
	if e.fields["router"] != "192.168.2.1" || e.fields["dns"] != "192.168.2.1" {
		t.Errorf("lease %v: want router and DNS 192.168.2.1", e.fields)
	}
	waitV6(t, n.a, sh.ULA, true, true, 5*time.Second, "SLAAC in the shared ULA")

	if got := resolve(t, n.a, "udp", sh.Router, "www.test."); got != "10.66.0.7" {
		t.Errorf("UDP via the DHCP DNS server: %s", got)
	}
	if got := resolve(t, n.a, "tcp", sh.Router6, "www6.test."); got != "10.66.0.7" {
		t.Errorf("TCP via the RDNSS server: %s", got)
	}
	for _, c := range []struct{ dst, want netip.Addr }{{inetAddr.Addr(), boxWAN.Addr()}, {inetAddr6.Addr(), boxWAN6.Addr()}} {
		if got := download(t, n.a, c.dst); got != 200_000 {
			t.Errorf("downloaded %d bytes from %v, want 200000", got, c.dst)
		}
		if a := <-seen; a != c.want {
			t.Errorf("%v saw the device as %v, want the box's WAN address %v (NAT)", c.dst, a, c.want)
		}
	}

	clients, err := sh.Clients()
	if err != nil {
		t.Fatal(err)
	}
	mac := hwAddr(t, n.a, "eth0")
	var phone *Client
	for i := range clients {
		if clients[i].MAC == mac {
			phone = &clients[i]
		}
	}
	if phone == nil {
		t.Fatalf("clients %+v: the device %s is missing", clients, mac)
	}
	if phone.Hostname != "phone" || phone.Addr.String() != e.fields["ip"] || len(phone.Addrs6) == 0 || phone.Down < 400_000 || phone.Up == 0 {
		t.Errorf("client %+v: want host phone, %s, an IPv6 address, >= 400 kB down (two downloads)", *phone, e.fields["ip"])
	}
	if len(clients) != 1 {
		t.Errorf("clients %+v, want only the device (no multicast, broadcast or link-local entries)", clients)
	}

	closed = true
	if err := sh.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	undone = true
	if err := j.Undo(); err != nil {
		t.Fatalf("undo: %v", err)
	}
	if ok, _ := netsys.NftTableExists(n.box, "p2l-share"); ok {
		t.Error("nftables table left after undo")
	}
	if v, _ := netsys.ReadSysctl(n.box, "net/ipv4/ip_forward"); v != fwdBefore {
		t.Errorf("ip_forward %s after undo, was %s", v, fwdBefore)
	}
	inNS(t, n.box, func() error {
		l, err := netlink.LinkByName("br0")
		if err != nil {
			return err
		}
		as, _ := netlink.AddrList(l, netlink.FAMILY_ALL)
		for _, a := range as {
			if ip, _ := netip.AddrFromSlice(a.IP); !ip.IsLinkLocalUnicast() {
				t.Errorf("address %v left on br0", a.IPNet)
			}
		}
		return nil
	})
}

func TestShareRefuses(t *testing.T) {
	roottest.Need(t)
	n := newLANTopology(t, true)
	j := netsys.NewJournal(nil)
	t.Cleanup(func() { j.Undo() })
	base := ShareConfig{NS: n.box, LAN: "br0", WAN: "wan0", Table: "p2l-share", NoIPv6: true,
		DNS: []netip.AddrPort{netip.MustParseAddrPort("10.78.0.2:53")}, ProbeWait: time.Second}

	over := base
	over.Subnet = netip.MustParsePrefix("10.78.0.0/16")
	if _, err := StartShare(j, over); err == nil || !strings.Contains(err.Error(), "--subnet") || !strings.Contains(err.Error(), "route 10.78.0.0/24 dev wan0") {
		t.Errorf("--subnet over the WAN's route: %v, want refused naming route 10.78.0.0/24 dev wan0", err)
	}
	same := base
	same.WAN = "br0"
	if _, err := StartShare(j, same); err == nil {
		t.Error("LAN = WAN accepted")
	}

	// Another DHCP server on the LAN (on device b).
	if err := j.AddAddr(n.b, "eth0", netip.MustParsePrefix("192.168.2.254/24")); err != nil {
		t.Fatal(err)
	}
	startDHCP(t, n.b, DHCPConfig{Iface: "eth0", Subnet: testSubnet, Router: netip.MustParseAddr("192.168.2.254")})
	_, err := StartShare(j, base)
	var other *OtherServer
	if !errors.As(err, &other) || other.ID.String() != "192.168.2.254" {
		t.Errorf("with another DHCP server: %v, want it named (192.168.2.254)", err)
	}
	if es := j.Entries(); len(es) != 1 {
		t.Errorf("refused shares left %v in the journal, want only the test's own address", es)
	}
}

// A WAN without IPv6: no ULA, no IPv6 address on the LAN, no router
// advertisements and no NAT66 (the NAT's sources are the IPv4 subnet).
func TestShareWithoutWANIPv6(t *testing.T) {
	roottest.Need(t)
	n := newLANTopology(t, true) // wan0 has only 10.78.0.1/24
	j := netsys.NewJournal(nil)
	t.Cleanup(func() { j.Undo() })
	sh, err := StartShare(j, ShareConfig{NS: n.box, LAN: "br0", WAN: "wan0", Table: "p2l-share4",
		DNS: []netip.AddrPort{netip.MustParseAddrPort("10.78.0.2:53")}, ProbeWait: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sh.Close() })
	if sh.ULA.IsValid() || sh.Router6.IsValid() || sh.ra != nil {
		t.Errorf("ULA %v, router %v, advertiser %v: want none on an IPv4-only WAN", sh.ULA, sh.Router6, sh.ra)
	}
	for _, e := range j.Entries() {
		if strings.Contains(e.Name, "ipv6") || strings.Contains(e.Prefix, ":") {
			t.Errorf("journal entry %s: want no IPv6 change", e)
		}
	}
	inNS(t, n.box, func() error {
		l, err := netlink.LinkByName("br0")
		if err != nil {
			return err
		}
		as, _ := netlink.AddrList(l, netlink.FAMILY_V6)
		for _, a := range as {
			if !a.IP.IsLinkLocalUnicast() {
				t.Errorf("IPv6 address %v on the LAN of an IPv4-only WAN", a.IPNet)
			}
		}
		return nil
	})
}
