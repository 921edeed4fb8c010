package main

import (
	"encoding/json"
	"fmt"
	"io"
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
	"github.com/pi2hop/pi2hop/hop"
	"github.com/pi2hop/pi2hop/instance"
	"github.com/pi2hop/pi2hop/internal/labnet"
	"github.com/pi2hop/pi2hop/internal/ping"
	"github.com/pi2hop/pi2hop/lan"
	"github.com/pi2hop/pi2hop/netsys"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// shareLab is two devices ─ veths ─ bridge bl in the box ─ veth bw ─
// internet: pi2hop share runs in the box with the bridge as its LAN (no
// address until share gives it one) and bw as its WAN; the internet has a
// DNS server and a download server. Downloads and pings run on device.
type shareLab struct {
	devices           [2]string
	device, box, inet string
	j                 *netsys.Journal
}

func newShareLab(t *testing.T, prefix string) *shareLab {
	t.Helper()
	l := &shareLab{devices: [2]string{prefix + "d", prefix + "e"}, box: prefix + "b", inet: prefix + "i", j: netsys.NewJournal(nil)}
	l.device = l.devices[0]
	t.Cleanup(func() {
		if err := l.j.Undo(); err != nil {
			t.Errorf("lab cleanup: %v", err)
		}
	})
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, ns := range []string{l.devices[0], l.devices[1], l.box, l.inet} {
		must(l.j.NewNamespace(ns))
	}
	// The box's link-local addresses are usable at once (no DAD), so
	// that the state the test compares against is settled when taken.
	for _, k := range []string{"net/ipv6/conf/all/accept_dad", "net/ipv6/conf/default/accept_dad"} {
		must(netsys.WriteSysctl(l.box, k, "0"))
	}
	must(l.j.AddVeth(l.devices[0], "eth0", l.box, "pa"))
	must(l.j.AddVeth(l.devices[1], "eth0", l.box, "pb"))
	must(l.j.AddVeth(l.box, "bw", l.inet, "eth0"))
	// The bridge goes with the box's namespace.
	must(labnet.Bridge(l.box, "bl", "pa", "pb"))
	l.waitBridgeUp(t)
	for _, a := range []struct{ ns, dev, addr string }{
		{l.box, "bw", "10.254.30.1/24"}, {l.inet, "eth0", "10.254.30.2/24"},
		{l.box, "bw", "fd00:254:30::1/64"}, {l.inet, "eth0", "fd00:254:30::2/64"},
	} {
		must(l.j.AddAddr(a.ns, a.dev, netip.MustParsePrefix(a.addr)))
	}
	for _, r := range []struct{ dst, gw string }{{"0.0.0.0/0", "10.254.30.2"}, {"::/0", "fd00:254:30::2"}} {
		must(l.j.AddRoute(l.box, netsys.Route{Dst: netip.MustParsePrefix(r.dst), Dev: "bw", Gw: netip.MustParseAddr(r.gw)}))
	}
	return l
}

// waitBridgeUp waits until the box's bridge is operationally up (a port
// forwards), at most 5 s.
func (l *shareLab) waitBridgeUp(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		var state netlink.LinkOperState
		if err := netsys.Do(l.box, func() error {
			br, err := netlink.LinkByName("bl")
			if err == nil {
				state = br.Attrs().OperState
			}
			return err
		}); err != nil {
			t.Fatal(err)
		}
		if state == netlink.OperUp {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the box's bridge bl is %v 5 s after its ports joined, want up", state)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// internet starts the internet's DNS server (www.test. is 10.254.30.2)
// and a server on port 5010 that sends to whoever connects until they
// close.
func (l *shareLab) internet(t *testing.T) {
	t.Helper()
	h := dns.HandlerFunc(func(w dns.ResponseWriter, r *dns.Msg) {
		m := new(dns.Msg)
		m.SetReply(r)
		rr, _ := dns.NewRR(r.Question[0].Name + " 60 IN A 10.254.30.2")
		m.Answer = []dns.RR{rr}
		w.WriteMsg(m)
	})
	var pc net.PacketConn
	var ln, src net.Listener
	if err := netsys.Do(l.inet, func() (err error) {
		if pc, err = net.ListenPacket("udp", "10.254.30.2:53"); err != nil {
			return err
		}
		if ln, err = net.Listen("tcp", "10.254.30.2:53"); err != nil {
			return err
		}
		src, err = net.Listen("tcp", ":5010")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	for _, s := range []*dns.Server{{PacketConn: pc, Handler: h}, {Listener: ln, Handler: h}} {
		go s.ActivateAndServe()
		t.Cleanup(func() { s.Shutdown() })
	}
	t.Cleanup(func() { src.Close() })
	go func() {
		buf := make([]byte, 64<<10)
		for {
			c, err := src.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				for {
					if _, err := c.Write(buf); err != nil {
						return
					}
				}
			}()
		}
	}()
}

// download reads from the internet's server at addr on the device until
// stop (or the end of the test).
func (l *shareLab) download(t *testing.T, addr string) (stop func()) {
	t.Helper()
	var c net.Conn
	if err := netsys.Do(l.device, func() (err error) { c, err = net.DialTimeout("tcp", addr, 5*time.Second); return }); err != nil {
		t.Fatalf("device: connect to %s: %v", addr, err)
	}
	t.Cleanup(func() { c.Close() })
	go io.Copy(io.Discard, c)
	return func() { c.Close() }
}

// udpBlaster answers a datagram "TOS RATE" from the device with a second
// of 1200-byte datagrams at RATE bit/s carrying ECN codepoint TOS, back to
// where it came from: a flow from the internet to the device, through
// the NAT's mapping.
func (l *shareLab) udpBlaster(t *testing.T, addr string) {
	t.Helper()
	var pc net.PacketConn
	if err := netsys.Do(l.inet, func() (err error) { pc, err = net.ListenPacket("udp", addr); return }); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	uc := pc.(*net.UDPConn)
	v6 := uc.LocalAddr().(*net.UDPAddr).IP.To4() == nil
	go func() {
		buf := make([]byte, 1200)
		for {
			n, peer, err := uc.ReadFrom(buf)
			if err != nil {
				return
			}
			var tos int
			var rate float64
			fmt.Sscanf(string(buf[:n]), "%d %g", &tos, &rate)
			raw, _ := uc.SyscallConn()
			raw.Control(func(fd uintptr) {
				if v6 {
					unix.SetsockoptInt(int(fd), unix.IPPROTO_IPV6, unix.IPV6_TCLASS, tos)
				} else {
					unix.SetsockoptInt(int(fd), unix.IPPROTO_IP, unix.IP_TOS, tos)
				}
			})
			start, sent := time.Now(), 0
			for time.Since(start) < time.Second {
				for float64(sent)*1200*8 < rate*time.Since(start).Seconds() {
					uc.WriteTo(buf, peer)
					sent++
				}
				time.Sleep(200 * time.Microsecond)
			}
		}
	}()
}

// blast asks the blaster at addr for its second of datagrams and reads
// them on the device; it returns how many arrived and how many of those
// carried CE (the ECN field as received, IP_RECVTOS / IPV6_RECVTCLASS).
func (l *shareLab) blast(t *testing.T, addr string, tos int, rate float64) (n, ce int) {
	t.Helper()
	var c *net.UDPConn
	if err := netsys.Do(l.device, func() error {
		nc, err := net.Dial("udp", addr)
		if err == nil {
			c = nc.(*net.UDPConn)
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	v6 := c.RemoteAddr().(*net.UDPAddr).IP.To4() == nil
	raw, _ := c.SyscallConn()
	var serr error
	raw.Control(func(fd uintptr) {
		if v6 {
			serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_IPV6, unix.IPV6_RECVTCLASS, 1)
		} else {
			serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_IP, unix.IP_RECVTOS, 1)
		}
	})
	if serr != nil {
		t.Fatal(serr)
	}
	fmt.Fprintf(c, "%d %g", tos, rate)
	c.SetReadDeadline(time.Now().Add(1500 * time.Millisecond))
	buf, oob := make([]byte, 1500), make([]byte, 128)
	for {
		_, oobn, _, _, err := c.ReadMsgUDP(buf, oob)
		if err != nil {
			return n, ce
		}
		n++
		msgs, _ := unix.ParseSocketControlMessage(oob[:oobn])
		for _, m := range msgs {
			if (m.Header.Type == unix.IP_TOS || m.Header.Type == unix.IPV6_TCLASS) && len(m.Data) > 0 && m.Data[0]&3 == 3 {
				ce++ // IP_TOS is one byte; IPV6_TCLASS an int, low byte first
			}
		}
	}
}

// downCounts are the downlink's ECN marks and AQM drops once it is idle
// (queue and delay line empty: every packet of a flow has its verdict),
// which it must be within 5 s.
func downCounts(t *testing.T, bin, name string) (marks, drops uint64) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		out, err := exec.Command(bin, "stats", "--name", name, "--json").Output()
		var s struct {
			Dirs []struct {
				ECNMark uint64 `json:"ecn_mark"`
				Dropped uint64 `json:"dropped"`
				Backlog int    `json:"backlog_packets"`
				Pending int    `json:"pending"`
			} `json:"directions"`
		}
		if err != nil || json.Unmarshal(out, &s) != nil || len(s.Dirs) != 2 {
			t.Fatalf("pi2hop stats --json: %v\n%s", err, out)
		}
		d := s.Dirs[1]
		if d.Backlog == 0 && d.Pending == 0 {
			return d.ECNMark, d.Dropped
		}
		if time.Now().After(deadline) {
			t.Fatalf("the downlink still holds %d queued and %d pending packets after 5 s", d.Backlog, d.Pending)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitSLAAC waits until the device has a usable (DAD done) address in a
// ULA prefix other than the lab's own.
func (l *shareLab) waitSLAAC(t *testing.T, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		var ok bool
		netsys.Do(l.device, func() error {
			link, err := netlink.LinkByName("eth0")
			if err != nil {
				return err
			}
			as, _ := netlink.AddrList(link, netlink.FAMILY_V6)
			for _, a := range as {
				ok = ok || (a.IP[0] == 0xfd && a.Flags&unix.IFA_F_TENTATIVE == 0)
			}
			return nil
		})
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the device formed no usable IPv6 address from the box's RA within %v", within)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// fetch reads up to n bytes from the internet's server at addr on the
// device, for at most d, and returns how many came.
func (l *shareLab) fetch(t *testing.T, addr string, n int, d time.Duration) int {
	t.Helper()
	var c net.Conn
	if err := netsys.Do(l.device, func() (err error) { c, err = net.DialTimeout("tcp", addr, d); return }); err != nil {
		t.Errorf("device: connect to %s: %v", addr, err)
		return 0
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(d))
	got, _ := io.ReadFull(c, make([]byte, n))
	return got
}

// rateOver measures the IP rate the device received on eth0 over d.
func (l *shareLab) rateOver(t *testing.T, d time.Duration) float64 {
	t.Helper()
	rate, err := labnet.RateOver(l.device, "eth0", labnet.EthernetHeader, d)
	if err != nil {
		t.Fatal(err)
	}
	return rate
}

// boxState is the box as share may change it: `ip addr`, `ip link`,
// every route of every table and every policy rule of both families,
// `nft list ruleset`, every IPv4 and IPv6 sysctl, namespaces named after
// the instance (beyond the lab's) and the instance's state file.
func (l *shareLab) boxState(t *testing.T, name string) string {
	t.Helper()
	var b strings.Builder
	for _, args := range [][]string{
		{"ip", "addr"}, {"ip", "link"},
		{"ip", "-4", "route", "show", "table", "all"}, {"ip", "-6", "route", "show", "table", "all"},
		{"ip", "-4", "rule"}, {"ip", "-6", "rule"}, {"nft", "list", "ruleset"},
	} {
		// Standard output only: ip link writes to standard error of
		// other namespaces' links coming and going ("Peer netns reference
		// is invalid" while a parallel test deletes one), which is no
		// state of this box.
		out, err := exec.Command("ip", append([]string{"netns", "exec", l.box}, args...)...).Output()
		if err != nil {
			var stderr []byte
			if ee, ok := err.(*exec.ExitError); ok {
				stderr = ee.Stderr
			}
			t.Fatalf("%s: %v\n%s%s", strings.Join(args, " "), err, out, stderr)
		}
		fmt.Fprintf(&b, "$ %s\n%s", strings.Join(args, " "), out)
	}
	// /proc/sys/net shows the namespace of the thread that opens it.
	if err := netsys.Do(l.box, func() error {
		for _, root := range []string{"/proc/sys/net/ipv4", "/proc/sys/net/ipv6"} {
			err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
				if err != nil || d.IsDir() {
					return err
				}
				v, err := os.ReadFile(p)
				if err != nil { // write-only (route/flush) or unset (stable_secret)
					return nil
				}
				fmt.Fprintf(&b, "%s=%s", strings.TrimPrefix(p, "/proc/sys/"), v)
				return nil
			})
			if err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	lab := map[string]bool{l.devices[0]: true, l.devices[1]: true, l.box: true, l.inet: true}
	nss, _ := os.ReadDir("/run/netns")
	for _, e := range nss {
		if strings.HasPrefix(e.Name(), name) && !lab[e.Name()] {
			fmt.Fprintf(&b, "namespace %s\n", e.Name())
		}
	}
	if _, err := os.Stat(instance.StatePath(name)); err == nil {
		b.WriteString("state file " + instance.StatePath(name) + "\n")
	}
	return b.String()
}

// checkBox fails t when the box is not as before (a boxState), showing
// what differs line by line.
func checkBox(t *testing.T, when, before, after string) {
	t.Helper()
	if after == before {
		return
	}
	was := map[string]bool{}
	for _, ln := range strings.Split(before, "\n") {
		was[ln] = true
	}
	now := map[string]bool{}
	var diff []string
	for _, ln := range strings.Split(after, "\n") {
		now[ln] = true
		if !was[ln] {
			diff = append(diff, "+ "+ln)
		}
	}
	for _, ln := range strings.Split(before, "\n") {
		if !now[ln] {
			diff = append(diff, "- "+ln)
		}
	}
	t.Errorf("%s the box is not as before (+ now, - before):\n%s", when, strings.Join(diff, "\n"))
}

// execShare starts `pi2hop share` in the box between the lab's LAN and
// WAN, with extra flags, its output collected.
func (l *shareLab) execShare(t *testing.T, bin, name string, extra ...string) (*exec.Cmd, *lockedBuffer) {
	t.Helper()
	args := append([]string{"netns", "exec", l.box, bin, "share", "--name", name, "--lan", "bl", "--wan", "bw", "--dns", "10.254.30.2"}, extra...)
	cmd := exec.Command("ip", args...)
	out := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, out
}

// startShare runs `pi2hop share` in the box and waits for its start-up
// text (printed once it serves) and control socket.
func (l *shareLab) startShare(t *testing.T, bin, name string, extra ...string) (*exec.Cmd, *lockedBuffer) {
	t.Helper()
	return startInstance(t, bin, l.box, name, 10*time.Second, "Unthrottle", append([]string{"share", "--name", name, "--lan", "bl", "--wan", "bw", "--dns", "10.254.30.2"}, extra...)...)
}

// udhcpcScript configures the device as a client's own script would,
// then records the event udhcpc reported, with the lease from its
// environment.
const udhcpcScript = `#!/bin/sh
case "$1" in
deconfig) ip -4 addr flush dev "$interface" ;;
bound|renew)
	ip addr replace "$ip/$mask" dev "$interface"
	ip route replace default via "$router" dev "$interface"
	;;
esac
echo "$1 ip=$ip router=$router dns=$dns lease=$lease" >> "$OUT"
`

// dhcpClient is busybox's udhcpc (Debian package udhcpc), a real DHCP
// client, on a device's eth0.
type dhcpClient struct {
	cmd         *exec.Cmd
	events, log string
	start       time.Time
	exited      chan error
	done        bool // exited has delivered
}

// startDHCP starts udhcpc on device ns with host name host; with once
// (-q) it quits when it has its lease.
func (l *shareLab) startDHCP(t *testing.T, ns, host string, once bool) *dhcpClient {
	t.Helper()
	dir := t.TempDir()
	script := filepath.Join(dir, "script")
	if err := os.WriteFile(script, []byte(udhcpcScript), 0o755); err != nil {
		t.Fatal(err)
	}
	c := &dhcpClient{events: filepath.Join(dir, "events"), log: filepath.Join(dir, "log"), exited: make(chan error, 1)}
	args := []string{"netns", "exec", ns, "udhcpc", "-f", "-i", "eth0", "-s", script, "-x", "hostname:" + host, "-t", "5", "-T", "1", "-A", "1"}
	if once {
		args = append(args, "-q", "-n")
	}
	c.cmd = exec.Command("ip", args...) // ip netns exec execs udhcpc: signals reach it
	c.cmd.Env = append(os.Environ(), "OUT="+c.events)
	logf, err := os.Create(c.log)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	c.cmd.Stdout, c.cmd.Stderr = logf, logf
	c.start = time.Now()
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { c.exited <- c.cmd.Wait() }()
	t.Cleanup(func() { c.stop(t) })
	return c
}

// waitEvent waits until the client has reported its n-th event of kind,
// at most within since the client started, and returns its fields.
func (c *dhcpClient) waitEvent(t *testing.T, kind string, n int, within time.Duration) map[string]string {
	t.Helper()
	for {
		seen := 0
		b, _ := os.ReadFile(c.events)
		for _, ln := range strings.Split(string(b), "\n") {
			f := strings.Fields(ln)
			if len(f) == 0 || f[0] != kind {
				continue
			}
			if seen++; seen == n {
				got := map[string]string{}
				for _, kv := range f[1:] {
					k, v, _ := strings.Cut(kv, "=")
					got[k] = v
				}
				t.Logf("udhcpc %s after %v: %v", kind, time.Since(c.start).Round(time.Millisecond), got)
				return got
			}
		}
		if time.Since(c.start) > within {
			log, _ := os.ReadFile(c.log)
			t.Fatalf("udhcpc: no %s event #%d within %v of its start; events:\n%s\nit said:\n%s", kind, n, within, b, log)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// stop ends the client (SIGTERM, no release: the device keeps its
// address) and waits at most 5 s for it.
func (c *dhcpClient) stop(t *testing.T) {
	t.Helper()
	if c.done {
		return
	}
	c.done = true
	c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.exited:
	case <-time.After(5 * time.Second):
		c.cmd.Process.Kill()
		<-c.exited
		t.Errorf("udhcpc still running 5 s after SIGTERM")
	}
}

// waitDone waits at most within for a once client to quit with its lease.
func (c *dhcpClient) waitDone(t *testing.T, within time.Duration) {
	t.Helper()
	c.done = true
	select {
	case err := <-c.exited:
		if err != nil {
			log, _ := os.ReadFile(c.log)
			t.Fatalf("udhcpc -q: %v\n%s", err, log)
		}
	case <-time.After(within):
		t.Fatalf("udhcpc -q still running %v after its start", within)
	}
}

// leaseOnce runs a once client on device ns and returns its lease.
func (l *shareLab) leaseOnce(t *testing.T, ns, host string) map[string]string {
	t.Helper()
	c := l.startDHCP(t, ns, host, true)
	got := c.waitEvent(t, "bound", 1, 5*time.Second)
	c.waitDone(t, 5*time.Second)
	return got
}

// defaultRoute is the device's IPv4 default gateway.
func (l *shareLab) defaultRoute(t *testing.T, ns string) string {
	t.Helper()
	gw := ""
	if err := netsys.Do(ns, func() error {
		rs, err := netlink.RouteList(nil, netlink.FAMILY_V4)
		for _, r := range rs {
			if (r.Dst == nil || r.Dst.IP.IsUnspecified()) && r.Gw != nil {
				gw = r.Gw.String()
			}
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return gw
}

// resolve asks the box's forwarder at addr for www.test. from the device,
// over network (udp or tcp).
func (l *shareLab) resolve(t *testing.T, network, addr string) string {
	t.Helper()
	var c net.Conn
	if err := netsys.Do(l.device, func() (err error) { c, err = net.DialTimeout(network, addr, 2*time.Second); return }); err != nil {
		t.Fatalf("device: %s to %s: %v", network, addr, err)
	}
	defer c.Close()
	m := new(dns.Msg)
	m.SetQuestion("www.test.", dns.TypeA)
	r, _, err := (&dns.Client{Net: network, Timeout: 3 * time.Second}).ExchangeWithConn(m, &dns.Conn{Conn: c})
	if err != nil || len(r.Answer) != 1 {
		t.Errorf("www.test. over %s from the device: %v %v", network, r, err)
		return ""
	}
	return r.Answer[0].(*dns.A).A.String()
}

func TestShareWholePath(t *testing.T) {
	needRoot(t, "ip", "udhcpc", "nft")
	bin := buildPi2hop(t)
	name := testInstance(8)
	os.Remove(instance.SharePath(name))
	t.Cleanup(func() { os.Remove(instance.SharePath(name)) })
	l := newShareLab(t, name)
	l.internet(t)
	// The box's firewall drops forwarded packets by policy, as Docker
	// leaves it (IPv4, with DOCKER-USER) and plain ip6tables does (IPv6):
	// share forwards anyway (--firewall-accept is on by default), says
	// so, and every exit below leaves the ruleset as it was (boxState).
	dropForwarding(t, l.box)
	before := l.boxState(t, name)
	t.Cleanup(func() { exec.Command("ip", "netns", "exec", l.box, bin, "share", "--cleanup", "--name", name).Run() })

	const rate = 20e6
	cmd, out := l.startShare(t, bin, name, "--rate", "20mbit", "--delay", "5ms")
	t.Logf("pi2hop share said:\n%s", out)
	for _, want := range []string{"192.168.2.0/24", "Settings > Developer > L4S", "defaults write -g network_enable_l4s -bool true",
		"pi2hop set --name " + name + " --rate unlimited", "share --cleanup --name " + name,
		"firewall: forwarding accepted in ", "chain DOCKER-USER of table ip filter", "chain FORWARD of table ip6 filter"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("start-up text lacks %q:\n%s", want, out)
		}
	}

	// Two devices, each with a real DHCP client: distinct addresses of
	// the LAN within 5 s, default route and DNS server the box.
	ca, cb := l.startDHCP(t, l.devices[0], "phone", false), l.startDHCP(t, l.devices[1], "laptop", false)
	lease, leaseB := ca.waitEvent(t, "bound", 1, 5*time.Second), cb.waitEvent(t, "bound", 1, 5*time.Second)
	for i, ls := range []map[string]string{lease, leaseB} {
		if ls["router"] != "192.168.2.1" || ls["dns"] != "192.168.2.1" || !strings.HasPrefix(ls["ip"], "192.168.2.") || ls["ip"] == "192.168.2.1" {
			t.Fatalf("lease %v: want an address of 192.168.2.0/24 with router and DNS 192.168.2.1", ls)
		}
		if gw := l.defaultRoute(t, l.devices[i]); gw != "192.168.2.1" {
			t.Errorf("device %s: default route via %q, want the box 192.168.2.1", l.devices[i], gw)
		}
	}
	if lease["ip"] == leaseB["ip"] {
		t.Fatalf("both devices got %s", lease["ip"])
	}
	// A renewal (udhcpc renews at once on SIGUSR1) keeps the address.
	ca.cmd.Process.Signal(syscall.SIGUSR1)
	if r := ca.waitEvent(t, "renew", 1, 5*time.Second); r["ip"] != lease["ip"] {
		t.Errorf("renewal gave %s, want the same %s", r["ip"], lease["ip"])
	}
	ca.stop(t) // no release: the devices keep their addresses
	cb.stop(t)

	// A name resolves through the box's forwarder, over UDP and TCP.
	for _, network := range []string{"udp", "tcp"} {
		if got := l.resolve(t, network, "192.168.2.1:53"); got != "10.254.30.2" {
			t.Errorf("www.test. over %s through the box: %q, want 10.254.30.2", network, got)
		}
	}

	// IPv6: the device forms an address from the box's RA and reaches
	// the internet through NAT66.
	l.waitSLAAC(t, 5*time.Second)
	if n := l.fetch(t, "[fd00:254:30::2]:5010", 100_000, 3*time.Second); n < 100_000 {
		t.Errorf("IPv6 through NAT66: %d bytes in 3 s, want 100 kB", n)
	}

	// A download through the bottleneck, at the shaped rate.
	stopDownload := l.download(t, "10.254.30.2:5010")
	time.Sleep(2 * time.Second) // past slow start
	got := l.rateOver(t, 5*time.Second)
	t.Logf("download at --rate 20mbit: %.2f Mbit/s IP at the device (%.1f %%)", got/1e6, got/rate*100)
	if got < 0.95*rate || got > 1.005*rate {
		t.Errorf("download %.0f bit/s, want 95..100.5 %% of 20 Mbit/s", got)
	}
	// Unthrottled, then throttled again, live.
	if out, err := exec.Command(bin, "set", "--name", name, "--rate", "unlimited").CombinedOutput(); err != nil {
		t.Fatalf("set --rate unlimited: %v\n%s", err, out)
	}
	time.Sleep(500 * time.Millisecond)
	got = l.rateOver(t, 2*time.Second)
	t.Logf("after set --rate unlimited: %.1f Mbit/s (%.1f x the 20 Mbit/s before)", got/1e6, got/rate)
	if got < 5*rate {
		t.Errorf("unlimited: %.0f bit/s, want at least 5 x 20 Mbit/s", got)
	}
	if out, err := exec.Command(bin, "set", "--name", name, "--rate", "10mbit").CombinedOutput(); err != nil {
		t.Fatalf("set --rate 10mbit: %v\n%s", err, out)
	}
	time.Sleep(time.Second)
	got = l.rateOver(t, 2*time.Second)
	t.Logf("from 1 s after set --rate 10mbit, over 2 s: %.2f Mbit/s", got/1e6)
	if got < 0.9*10e6 || got > 1.01*10e6 {
		t.Errorf("after set --rate 10mbit: %.0f bit/s, want 90..101 %% of 10 Mbit/s", got)
	}

	// The same download over IPv6, through NAT66.
	stopDownload()
	stopDownload = l.download(t, "[fd00:254:30::2]:5010")
	time.Sleep(1500 * time.Millisecond)
	got = l.rateOver(t, 3*time.Second)
	t.Logf("IPv6 download at 10mbit: %.2f Mbit/s IP at the device (%.1f %%)", got/1e6, got/10e6*100)
	if got < 0.95*10e6 || got > 1.005*10e6 {
		t.Errorf("IPv6 download %.0f bit/s, want 95..100.5 %% of 10 Mbit/s", got)
	}

	// DualPI2 through the NAT, both families: an ECT(1) flow from the
	// internet at twice the 10 Mbit/s is marked; a Not-ECT one at the
	// same rate is dropped and never marked.
	stopDownload()
	time.Sleep(200 * time.Millisecond)
	l.udpBlaster(t, "10.254.30.2:5020")
	l.udpBlaster(t, "[fd00:254:30::2]:5020")
	for _, dst := range []string{"10.254.30.2:5020", "[fd00:254:30::2]:5020"} {
		m0, d0 := downCounts(t, bin, name)
		got, ce := l.blast(t, dst, 0x01, 20e6)
		m1, d1 := downCounts(t, bin, name)
		t.Logf("ECT(1) at 20 Mbit/s from %s: %d datagrams arrived, %d of them CE; the hop marked %d, dropped %d", dst, got, ce, m1-m0, d1-d0)
		if got == 0 || ce == 0 || m1 == m0 {
			t.Errorf("ECT(1) flow from %s: %d arrived, %d CE at the device, %d marks; want CE marks", dst, got, ce, m1-m0)
		}
		got, ce = l.blast(t, dst, 0x00, 20e6)
		m2, d2 := downCounts(t, bin, name)
		t.Logf("Not-ECT at 20 Mbit/s from %s: %d datagrams arrived, %d of them CE; the hop marked %d, dropped %d", dst, got, ce, m2-m1, d2-d1)
		if got == 0 || ce != 0 || m2 != m1 || d2 == d1 {
			t.Errorf("Not-ECT flow from %s: %d arrived, %d CE, %d marks, %d drops; want drops and no mark", dst, got, ce, m2-m1, d2-d1)
		}
	}

	// stats lists both devices with their leases, and the bytes of the
	// one that downloaded.
	sout, err := exec.Command(bin, "stats", "--name", name).CombinedOutput()
	t.Logf("pi2hop stats:\n%s", sout)
	for _, want := range []string{lease["ip"], "phone", leaseB["ip"], "laptop", "MB"} {
		if err != nil || !strings.Contains(string(sout), want) {
			t.Errorf("stats: %v; lacks %q (both devices, megabytes down to %s)", err, want, lease["ip"])
		}
	}
	jout, err := exec.Command(bin, "stats", "--name", name, "--json").Output()
	var js struct {
		Clients []struct {
			Addr      string `json:"addr"`
			DownBytes uint64 `json:"down_bytes"`
		} `json:"clients"`
	}
	down := map[string]uint64{}
	if err == nil {
		err = json.Unmarshal(jout, &js)
	}
	for _, c := range js.Clients {
		down[c.Addr] = c.DownBytes
	}
	if d, ok := down[leaseB["ip"]]; err != nil || len(js.Clients) != 2 || down[lease["ip"]] < 1e6 || !ok || d > 0 {
		t.Errorf("stats --json clients: %v; want %s with megabytes down, %s with none\n%s", err, lease["ip"], leaseB["ip"], jout)
	}

	cmd.Process.Signal(syscall.SIGTERM)
	if err := waitExit(t, cmd, 10*time.Second); err != nil {
		t.Errorf("pi2hop share after SIGTERM: %v\n%s", err, out)
	}
	checkBox(t, "after SIGTERM", before, l.boxState(t, name))

	// Restarted, the share gives each device its address again (the
	// lease table): the one with the higher address asks first, so
	// without the table it would get the lowest free one. SIGHUP takes
	// everything down too.
	cmd, _ = l.startShare(t, bin, name)
	order := []struct {
		ns, host, ip string
	}{{l.devices[0], "phone", lease["ip"]}, {l.devices[1], "laptop", leaseB["ip"]}}
	if netip.MustParseAddr(lease["ip"]).Less(netip.MustParseAddr(leaseB["ip"])) {
		order[0], order[1] = order[1], order[0]
	}
	for _, d := range order {
		if again := l.leaseOnce(t, d.ns, d.host); again["ip"] != d.ip {
			t.Errorf("after a restart %s got %s, want its %s", d.host, again["ip"], d.ip)
		}
	}
	cmd.Process.Signal(syscall.SIGHUP)
	if err := waitExit(t, cmd, 10*time.Second); err != nil {
		t.Errorf("pi2hop share after SIGHUP: %v", err)
	}
	checkBox(t, "after SIGHUP", before, l.boxState(t, name))

	// Killed: share --cleanup takes everything away.
	cmd, _ = l.startShare(t, bin, name)
	cmd.Process.Kill()
	waitExit(t, cmd, 10*time.Second)
	if out, err := exec.Command("ip", "netns", "exec", l.box, bin, "share", "--cleanup", "--name", name).CombinedOutput(); err != nil {
		t.Fatalf("share --cleanup: %v\n%s", err, out)
	}
	checkBox(t, "after SIGKILL and share --cleanup", before, l.boxState(t, name))
}

// The idle RTT through share is the path's: 2 x --delay plus what the
// hop costs (the median of 60 pings, timed by kernel receive timestamps),
// over IPv4 and over IPv6 through NAT66.
// The bound is hop's TestPairIdleRTT's, 1 ms, for the same reason: a
// ping crosses the hop twice and may wake halted vCPUs several times
// through the host, plus the release lateness, and over 1 ms means a
// release missed its time. The figure, the pacing lateness and the wake-up
// probe are logged. Why a gateway adds more than a pair (the kernel's own
// work for bridge, forwarding and NAT, cut into pieces run cold 5 ms
// apart) and why a tighter bound would measure the machine rather than
// the hop is in docs/performance.md.
func TestShareIdleRTT(t *testing.T) {
	needRoot(t, "ip", "udhcpc")
	bin := buildPi2hop(t)
	name := testInstance(9)
	os.Remove(instance.SharePath(name))
	t.Cleanup(func() { os.Remove(instance.SharePath(name)) })
	l := newShareLab(t, name)
	t.Cleanup(func() { exec.Command("ip", "netns", "exec", l.box, bin, "share", "--cleanup", "--name", name).Run() })
	cmd, _ := l.startShare(t, bin, name, "--rate", "100mbit", "--delay", "5ms")
	l.leaseOnce(t, l.device, "phone")
	var rtts [2]ping.Idle
	var errs [2]error
	for i, dst := range []netip.Addr{netip.MustParseAddr("10.254.30.2"), netip.MustParseAddr("fd00:254:30::2")} {
		if dst.Is6() {
			l.waitSLAAC(t, 5*time.Second) // under way while the IPv4 pings ran
		}
		ping.Median(l.device, dst, 3, 10*time.Millisecond) // warm up: neighbours, conntrack
		rtts[i], errs[i] = ping.Measure(l.device, dst, 60, 10*time.Millisecond)
		t.Logf("idle RTT through share to %v with --delay 5ms: median %v (added %v; host steal %v; issue 9's target 0.3 ms)", dst, rtts[i].Median, rtts[i].Median-10*time.Millisecond, rtts[i].Steal)
	}
	if out, err := exec.Command(bin, "stats", "--name", name, "--json").Output(); err == nil {
		var s struct {
			Dirs []struct {
				Dir      string          `json:"dir"`
				Lateness hop.UsQuantiles `json:"lateness"`
			} `json:"directions"`
			WakeProbe *hop.WakeProbeRow `json:"floor"`
		}
		if json.Unmarshal(out, &s) == nil {
			for _, d := range s.Dirs {
				t.Logf("%s: release lateness p50 %.0f µs p99 %.0f µs worst %.0f µs", d.Dir, d.Lateness.P50, d.Lateness.P99, d.Lateness.Max)
			}
			if s.WakeProbe != nil {
				t.Logf("wake-up probe: sleeping %.0f µs woke at worst %.0f µs late (realtime %v)", s.WakeProbe.PeriodUs, s.WakeProbe.WorstLate, s.WakeProbe.RealTime)
			}
		}
	}
	for i, family := range []string{"IPv4", "IPv6 (NAT66)"} {
		// 1 ms, and what the host's steal can explain (TestPairIdleRTT).
		bound := time.Millisecond + rtts[i].StealAllowance()
		if added := rtts[i].Median - 10*time.Millisecond; errs[i] != nil || added < 0 || added > bound {
			t.Errorf("idle RTT over %s %v, %v; want 10 ms + at most %v (1 ms and what the host's steal of %v explains)", family, rtts[i].Median, errs[i], bound, rtts[i].Steal)
		}
	}
	cmd.Process.Signal(syscall.SIGTERM)
	if err := waitExit(t, cmd, 10*time.Second); err != nil {
		t.Errorf("pi2hop share after SIGTERM: %v", err)
	}
}

// share refuses a --subnet over a route of the box, naming the route, and
// a LAN where another DHCP server answers, naming it; neither leaves a
// trace.
func TestShareRefuses(t *testing.T) {
	needRoot(t, "ip", "nft")
	t.Parallel() // checks no timing: runs beside the others that check none
	bin := buildPi2hop(t)
	name := testInstance(11)
	os.Remove(instance.SharePath(name))
	t.Cleanup(func() { os.Remove(instance.SharePath(name)) })
	l := newShareLab(t, name)
	before := l.boxState(t, name)
	share := func(extra ...string) string {
		t.Helper()
		cmd, out := l.execShare(t, bin, name, extra...)
		if err := waitExit(t, cmd, 15*time.Second); err == nil {
			t.Errorf("share %v started:\n%s", extra, out)
		}
		checkBox(t, fmt.Sprintf("after share %v was refused", extra), before, l.boxState(t, name))
		return out.String()
	}
	if out := share("--subnet", "10.254.0.0/16"); !strings.Contains(out, "--subnet") || !strings.Contains(out, "route 10.254.30.0/24 dev bw") {
		t.Errorf("--subnet over the WAN's route: want it refused naming route 10.254.30.0/24 dev bw:\n%s", out)
	}

	// Another DHCP server, on the device's side of the LAN.
	if err := l.j.AddAddr(l.device, "eth0", netip.MustParsePrefix("192.168.7.1/24")); err != nil {
		t.Fatal(err)
	}
	var srv *lan.DHCPServer
	if err := netsys.Do(l.device, func() (err error) {
		srv, err = lan.NewDHCPServer(lan.DHCPConfig{Iface: "eth0", Subnet: netip.MustParsePrefix("192.168.7.0/24")}, nil)
		return
	}); err != nil {
		t.Fatal(err)
	}
	go srv.Serve()
	t.Cleanup(func() { srv.Close() })
	if out := share(); !strings.Contains(out, "another DHCP server answers on bl: 192.168.7.1") {
		t.Errorf("with another DHCP server on the LAN: want it refused naming 192.168.7.1:\n%s", out)
	}
}
