package lan

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/pi2hop/pi2hop/internal/labnet"
	"github.com/pi2hop/pi2hop/internal/roottest"
	"github.com/pi2hop/pi2hop/netsys"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// lanTopology is a box whose bridge br0 is the LAN of two devices (a and
// b, each eth0 on a veth port of the bridge), with wan0 towards inet.
type lanTopology struct {
	box, a, b, inet string
}

var (
	testSubnet = netip.MustParsePrefix("192.168.2.0/24")
	boxLAN     = netip.MustParsePrefix("192.168.2.1/24")
	boxWAN     = netip.MustParsePrefix("10.78.0.1/24")
	inetAddr   = netip.MustParsePrefix("10.78.0.2/24")
)

// newLANTopology builds it; the box has 192.168.2.1 on br0 unless bare
// (for a share, which addresses the LAN itself).
func newLANTopology(t *testing.T, bare bool) lanTopology {
	t.Helper()
	base := roottest.Name("p2l")
	n := lanTopology{box: base + "x", a: base + "a", b: base + "b", inet: base + "i"}
	j := netsys.NewJournal(nil)
	t.Cleanup(func() {
		if err := j.Undo(); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, ns := range []string{n.box, n.a, n.b, n.inet} {
		must(j.NewNamespace(ns))
	}
	must(j.AddVeth(n.box, "pa", n.a, "eth0"))
	must(j.AddVeth(n.box, "pb", n.b, "eth0"))
	must(j.AddVeth(n.box, "wan0", n.inet, "eth0"))
	// The bridge goes with the box's namespace.
	must(labnet.Bridge(n.box, "br0", "pa", "pb"))
	if !bare {
		must(j.AddAddr(n.box, "br0", boxLAN))
	}
	must(j.AddAddr(n.box, "wan0", boxWAN))
	must(j.AddAddr(n.inet, "eth0", inetAddr))
	return n
}

// inNS runs f in namespace ns or fails the test.
func inNS(t *testing.T, ns string, f func() error) {
	t.Helper()
	if err := netsys.Do(ns, f); err != nil {
		t.Fatal(err)
	}
}

type testServer struct {
	*DHCPServer
	done    chan error
	stopped bool
}

func startDHCP(t *testing.T, ns string, cfg DHCPConfig) *testServer {
	t.Helper()
	s := &testServer{done: make(chan error, 1)}
	inNS(t, ns, func() (err error) { s.DHCPServer, err = NewDHCPServer(cfg, nil); return })
	go func() { s.done <- s.Serve() }()
	t.Cleanup(func() { s.stop(t) })
	return s
}

func (s *testServer) stop(t *testing.T) {
	t.Helper()
	if s.stopped {
		return
	}
	s.stopped = true
	s.Close()
	select {
	case err := <-s.done:
		if err != nil {
			t.Errorf("DHCP Serve: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Error("DHCP Serve did not return within 5 s of Close")
	}
}

// udhcpcScript records each event udhcpc reports (with the lease it got
// in its environment) and configures the device as a client would.
const udhcpcScript = `#!/bin/sh
echo "$1 ip=$ip mask=$mask router=$router dns=$dns lease=$lease serverid=$serverid" >> "$OUT"
case "$1" in
deconfig) ip -4 addr flush dev "$interface" ;;
bound|renew)
	ip addr replace "$ip/$mask" dev "$interface"
	if [ -n "$router" ]; then ip route replace default via "$router" dev "$interface"; fi
	;;
esac
`

// client is busybox's udhcpc (Debian package udhcpc) in a device
// namespace: a real DHCP client.
type client struct {
	cmd  *exec.Cmd
	out  string // the events the script recorded
	log  string // udhcpc's own output
	name string
}

func startClient(t *testing.T, ns, name string) *client {
	t.Helper()
	path, err := exec.LookPath("udhcpc")
	if err != nil {
		t.Fatalf("needs udhcpc (the test asks for it with roottest.Need): %v", err)
	}
	dir := t.TempDir()
	script := filepath.Join(dir, "script")
	if err := os.WriteFile(script, []byte(udhcpcScript), 0o755); err != nil {
		t.Fatal(err)
	}
	c := &client{out: filepath.Join(dir, "events"), name: name}
	c.cmd = exec.Command(path, "-f", "-i", "eth0", "-s", script, "-x", "hostname:"+name, "-t", "10", "-T", "1", "-A", "1")
	c.cmd.Env = append(os.Environ(), "OUT="+c.out)
	c.log = filepath.Join(dir, "log")
	logf, err := os.Create(c.log)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	c.cmd.Stdout, c.cmd.Stderr = logf, logf
	inNS(t, ns, c.cmd.Start)
	t.Cleanup(c.stop)
	return c
}

func (c *client) stop() {
	if c.cmd.ProcessState == nil {
		c.cmd.Process.Signal(syscall.SIGTERM)
		c.cmd.Wait()
	}
}

type event struct {
	kind   string
	fields map[string]string
}

func (c *client) events() []event {
	f, err := os.Open(c.out)
	if err != nil {
		return nil
	}
	defer f.Close()
	var es []event
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		parts := strings.Fields(sc.Text())
		e := event{kind: parts[0], fields: map[string]string{}}
		for _, p := range parts[1:] {
			k, v, _ := strings.Cut(p, "=")
			e.fields[k] = v
		}
		es = append(es, e)
	}
	return es
}

// waitEvent waits until the client has reported the n-th event of kind
// and returns it.
func (c *client) waitEvent(t *testing.T, kind string, n int, within time.Duration) event {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		seen := 0
		for _, e := range c.events() {
			if e.kind == kind {
				if seen++; seen == n {
					return e
				}
			}
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(c.log)
			t.Fatalf("%s: no %s event #%d within %v; events: %v; udhcpc said:\n%s", c.name, kind, n, within, c.events(), log)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func hwAddr(t *testing.T, ns, dev string) string {
	t.Helper()
	var mac string
	inNS(t, ns, func() error {
		l, err := netlink.LinkByName(dev)
		if err == nil {
			mac = l.Attrs().HardwareAddr.String()
		}
		return err
	})
	return mac
}

func TestRealClientsGetLeases(t *testing.T) {
	roottest.Need(t, "udhcpc", "ip") // ip: udhcpc's script configures the device
	n := newLANTopology(t, false)
	leaseFile := filepath.Join(t.TempDir(), "leases.json")
	cfg := DHCPConfig{Iface: "br0", Subnet: testSubnet, LeaseTime: time.Minute,
		OnChange: func(ls []Lease) {
			if err := SaveLeases(leaseFile, ls); err != nil {
				t.Errorf("save leases: %v", err)
			}
		}}
	srv := startDHCP(t, n.box, cfg)

	start := time.Now()
	ca, cb := startClient(t, n.a, "deva"), startClient(t, n.b, "devb")
	ea, eb := ca.waitEvent(t, "bound", 1, 5*time.Second), cb.waitEvent(t, "bound", 1, 5*time.Second)
	t.Logf("both bound %v after the clients started: a %s, b %s", time.Since(start).Round(time.Millisecond), ea.fields["ip"], eb.fields["ip"])
	for _, e := range []event{ea, eb} {
		ip, err := netip.ParseAddr(e.fields["ip"])
		if err != nil || !testSubnet.Contains(ip) || ip == boxLAN.Addr() {
			t.Errorf("leased %q, want an address of %v other than the box's", e.fields["ip"], testSubnet)
		}
		for k, want := range map[string]string{"router": "192.168.2.1", "dns": "192.168.2.1", "serverid": "192.168.2.1", "mask": "24", "lease": "60"} {
			if e.fields[k] != want {
				t.Errorf("lease %s: %s = %q, want %q", e.fields["ip"], k, e.fields[k], want)
			}
		}
	}
	if ea.fields["ip"] == eb.fields["ip"] {
		t.Fatalf("both devices got %s", ea.fields["ip"])
	}
	macA, macB := hwAddr(t, n.a, "eth0"), hwAddr(t, n.b, "eth0")
	got := map[string]Lease{}
	for _, l := range srv.Leases() {
		got[l.MAC] = l
	}
	for _, c := range []struct{ mac, ip, host string }{{macA, ea.fields["ip"], "deva"}, {macB, eb.fields["ip"], "devb"}} {
		l := got[c.mac]
		if l.Addr.String() != c.ip || l.Hostname != c.host || !l.Active(time.Now()) {
			t.Errorf("lease table for %s: %+v, want %s host %s, active", c.mac, l, c.ip, c.host)
		}
	}

	// Renewal (udhcpc renews at once on SIGUSR1): same address, later expiry.
	before := got[macA].Expiry
	time.Sleep(1100 * time.Millisecond) // so the new expiry is visibly later (1 s resolution)
	ca.cmd.Process.Signal(syscall.SIGUSR1)
	r := ca.waitEvent(t, "renew", 1, 5*time.Second)
	if r.fields["ip"] != ea.fields["ip"] {
		t.Errorf("renewal gave %s, want the same %s", r.fields["ip"], ea.fields["ip"])
	}
	for _, l := range srv.Leases() {
		if l.MAC == macA && !l.Expiry.After(before) {
			t.Errorf("renewed lease expires %v, not after %v", l.Expiry, before)
		}
	}

	// Restart: clients and server stop; a fresh server from the saved
	// table; fresh clients, the one with the higher address first, so
	// that without the table it would get the lowest free address.
	ca.stop()
	cb.stop()
	srv.stop(t)
	for _, ns := range []string{n.a, n.b} {
		inNS(t, ns, func() error {
			l, err := netlink.LinkByName("eth0")
			if err != nil {
				return err
			}
			addrs, _ := netlink.AddrList(l, netlink.FAMILY_V4)
			for _, a := range addrs {
				netlink.AddrDel(l, &a)
			}
			return nil
		})
	}
	saved, err := LoadLeases(leaseFile)
	if err != nil || len(saved) != 2 {
		t.Fatalf("saved lease table: %v, %v; want two leases", saved, err)
	}
	cfg.Leases = saved
	startDHCP(t, n.box, cfg)
	first, second, firstNS, secondNS, firstIP, secondIP := "devb", "deva", n.b, n.a, eb.fields["ip"], ea.fields["ip"]
	if netip.MustParseAddr(ea.fields["ip"]).Compare(netip.MustParseAddr(eb.fields["ip"])) > 0 {
		first, second, firstNS, secondNS, firstIP, secondIP = second, first, secondNS, firstNS, secondIP, firstIP
	}
	c1 := startClient(t, firstNS, first)
	if e := c1.waitEvent(t, "bound", 1, 5*time.Second); e.fields["ip"] != firstIP {
		t.Errorf("after the restart %s got %s, want its %s", first, e.fields["ip"], firstIP)
	}
	c2 := startClient(t, secondNS, second)
	if e := c2.waitEvent(t, "bound", 1, 5*time.Second); e.fields["ip"] != secondIP {
		t.Errorf("after the restart %s got %s, want its %s", second, e.fields["ip"], secondIP)
	}
}

func TestProbeNamesAnotherServer(t *testing.T) {
	roottest.Need(t)
	n := newLANTopology(t, false)
	var o *OtherServer
	probe := func() {
		t.Helper()
		inNS(t, n.box, func() (err error) { o, err = ProbeDHCP("br0", time.Second); return })
	}
	probe()
	if o != nil {
		t.Fatalf("probe on a LAN without a DHCP server found %v", o)
	}
	// Device b runs a DHCP server of its own on the LAN.
	j := netsys.NewJournal(nil)
	t.Cleanup(func() { j.Undo() })
	if err := j.AddAddr(n.b, "eth0", netip.MustParsePrefix("192.168.2.254/24")); err != nil {
		t.Fatal(err)
	}
	startDHCP(t, n.b, DHCPConfig{Iface: "eth0", Subnet: testSubnet, Router: netip.MustParseAddr("192.168.2.254")})
	probe()
	if o == nil {
		t.Fatal("probe missed the DHCP server on device b")
	}
	if o.ID.String() != "192.168.2.254" || !strings.Contains(o.Error(), "192.168.2.254") || !strings.Contains(o.Error(), "br0") {
		t.Errorf("probe found %+v (%q), want server 192.168.2.254 on br0 named", o, o.Error())
	}
}

// dialIn dials from namespace ns, for at most 3 s; the connection stays
// there.
func dialIn(ns string) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		var c net.Conn
		err := netsys.Do(ns, func() (err error) {
			var d net.Dialer
			c, err = d.DialContext(ctx, network, addr)
			return
		})
		return c, err
	}
}

func TestDNSFromDeviceThroughForwarder(t *testing.T) {
	roottest.Need(t)
	n := newLANTopology(t, false)
	j := netsys.NewJournal(nil)
	t.Cleanup(func() { j.Undo() })
	if err := j.AddAddr(n.a, "eth0", netip.MustParsePrefix("192.168.2.50/24")); err != nil {
		t.Fatal(err)
	}
	// The Internet's DNS server, for names under test.
	asked := make(chan string, 4)
	inetDNS(t, n.inet, inetAddr.Addr(), asked)

	var f *DNSForwarder
	inNS(t, n.box, func() (err error) {
		f, err = NewDNSForwarder(DNSConfig{Listen: []netip.AddrPort{netip.MustParseAddrPort("192.168.2.1:53")},
			Upstreams: []netip.AddrPort{netip.MustParseAddrPort("10.78.0.2:53")}, Dial: dialIn(n.box)}, nil)
		return
	})
	done := make(chan error, 1)
	go func() { done <- f.Serve() }()
	t.Cleanup(func() { f.Close(); <-done })

	for _, c := range []struct{ network, name string }{{"udp", "phone.test."}, {"tcp", "laptop.test."}} {
		conn, err := dialIn(n.a)(context.Background(), c.network, "192.168.2.1:53")
		if err != nil {
			t.Fatal(err)
		}
		m := new(dns.Msg)
		m.SetQuestion(c.name, dns.TypeA)
		r, _, err := (&dns.Client{Net: c.network, Timeout: 3 * time.Second}).ExchangeWithConn(m, &dns.Conn{Conn: conn})
		conn.Close()
		if err != nil {
			t.Fatalf("%s query for %s from the device: %v", c.network, c.name, err)
		}
		if len(r.Answer) != 1 || r.Answer[0].(*dns.A).A.String() != "10.66.0.7" {
			t.Errorf("%s %s: answer %v, want 10.66.0.7", c.network, c.name, r.Answer)
		}
		select {
		case a := <-asked:
			want := fmt.Sprintf("%s tcp=%v from=10.78.0.1", c.name, c.network == "tcp")
			if !strings.HasPrefix(a, want) {
				t.Errorf("upstream was asked %q, want %q (the box asking)", a, want)
			}
		default:
			t.Errorf("%s %s: the upstream was not asked", c.network, c.name)
		}
	}
}

// v6State is what a device learnt from the box's advertisements: its
// SLAAC address in prefix (once usable) and whether its default route is the box.
func v6State(t *testing.T, ns string, prefix netip.Prefix) (addr netip.Addr, defRoute bool) {
	t.Helper()
	inNS(t, ns, func() error {
		l, err := netlink.LinkByName("eth0")
		if err != nil {
			return err
		}
		as, _ := netlink.AddrList(l, netlink.FAMILY_V6)
		for _, a := range as {
			// Usable once duplicate address detection is done.
			if ip, _ := netip.AddrFromSlice(a.IP); prefix.Contains(ip) && a.Flags&unix.IFA_F_TENTATIVE == 0 {
				addr = ip
			}
		}
		rs, _ := netlink.RouteList(l, netlink.FAMILY_V6)
		for _, r := range rs {
			if r.Dst == nil || r.Dst.IP.IsUnspecified() {
				defRoute = defRoute || r.Gw.IsLinkLocalUnicast()
			}
		}
		return nil
	})
	return addr, defRoute
}

func waitV6(t *testing.T, ns string, prefix netip.Prefix, wantAddr, wantRoute bool, within time.Duration, what string) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		a, r := v6State(t, ns, prefix)
		if a.IsValid() == wantAddr && r == wantRoute {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: within %v the device has address %v (want one: %v), default route via the box %v (want %v)", what, within, a, wantAddr, r, wantRoute)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestRouterAdvertisementsGiveDevicesIPv6(t *testing.T) {
	roottest.Need(t)
	n := newLANTopology(t, false)
	prefix := NewULA()
	j := netsys.NewJournal(nil)
	t.Cleanup(func() { j.Undo() })
	if err := j.AddAddr(n.box, "br0", netip.PrefixFrom(RouterAddr6(prefix), 64)); err != nil {
		t.Fatal(err)
	}
	if err := j.SetSysctl(n.box, "net/ipv6/conf/all/forwarding", "1"); err != nil {
		t.Fatal(err)
	}
	var a *Advertiser
	// The longest interval: after the first advertisement the next
	// unsolicited one is 16 s away, so sooner answers are to solicitations.
	inNS(t, n.box, func() (err error) {
		a, err = NewAdvertiser(RAConfig{Iface: "br0", Prefix: prefix, Interval: 1800 * time.Second}, 5*time.Second, nil)
		return
	})
	done := make(chan error, 1)
	go func() { done <- a.Serve() }()
	closed := false
	t.Cleanup(func() {
		if !closed {
			a.Close()
		}
	})

	waitV6(t, n.a, prefix, true, true, 5*time.Second, "first advertisement")
	// Flap the device's link: its addresses go, and it solicits.
	inNS(t, n.a, func() error {
		l, err := netlink.LinkByName("eth0")
		if err != nil {
			return err
		}
		if err := netlink.LinkSetDown(l); err != nil {
			return err
		}
		return netlink.LinkSetUp(l)
	})
	// At most 5 + 8 s after the first advertisement: before the second
	// unsolicited one (16 s), so this is the answer to the solicitation.
	waitV6(t, n.a, prefix, true, true, 8*time.Second, "answer to the solicitation after a link flap")
	// Closing says goodbye with router lifetime 0: the default route goes.
	closed = true
	if err := a.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if err := <-done; err != nil {
		t.Errorf("Serve: %v", err)
	}
	waitV6(t, n.a, prefix, true, false, 3*time.Second, "final advertisement with router lifetime 0")
}

func TestBoxInUse(t *testing.T) {
	roottest.Need(t)
	n := newLANTopology(t, false)
	used, err := BoxInUse(n.box)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := ChooseSubnet(used); err != nil || got.String() != "192.168.3.0/24" {
		t.Errorf("ChooseSubnet with 192.168.2.0/24 on br0 = %v, %v; want 192.168.3.0/24", got, err)
	}
	err = CheckSubnet(netip.MustParsePrefix("10.78.0.0/16"), used)
	if err == nil || !strings.Contains(err.Error(), "route 10.78.0.0/24 dev wan0") {
		t.Errorf("CheckSubnet(10.78.0.0/16) = %v, want it to name route 10.78.0.0/24 dev wan0", err)
	}
	if has, err := WANHasIPv6(n.box, "wan0"); err != nil || has {
		t.Errorf("WANHasIPv6 on an IPv4-only WAN = %v, %v", has, err)
	}
}
