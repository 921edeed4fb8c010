package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/pi2hop/pi2hop/hop"
	"github.com/pi2hop/pi2hop/hop/instance"
	"github.com/pi2hop/pi2hop/lan"
	"github.com/pi2hop/pi2hop/tun"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// shareLab is device ─ veth ─ box ─ veth ─ internet: pi2hop share runs in
// the box with bl as its LAN (no address until share gives it one) and bw
// as its WAN; the internet has a DNS server and a download server.
type shareLab struct {
	device, box, inet string
	j                 *tun.Journal
}

func newShareLab(t *testing.T, prefix string) *shareLab {
	t.Helper()
	l := &shareLab{device: prefix + "d", box: prefix + "b", inet: prefix + "i", j: tun.NewJournal(nil)}
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
	for _, ns := range []string{l.device, l.box, l.inet} {
		must(l.j.NewNamespace(ns))
	}
	must(l.j.AddVeth(l.device, "eth0", l.box, "bl"))
	must(l.j.AddVeth(l.box, "bw", l.inet, "eth0"))
	for _, a := range []struct{ ns, dev, addr string }{
		{l.box, "bw", "10.254.30.1/24"}, {l.inet, "eth0", "10.254.30.2/24"},
		{l.box, "bw", "fd00:254:30::1/64"}, {l.inet, "eth0", "fd00:254:30::2/64"},
	} {
		must(l.j.AddAddr(a.ns, a.dev, netip.MustParsePrefix(a.addr)))
	}
	for _, r := range []struct{ dst, gw string }{{"0.0.0.0/0", "10.254.30.2"}, {"::/0", "fd00:254:30::2"}} {
		must(l.j.AddRoute(l.box, tun.Route{Dst: netip.MustParsePrefix(r.dst), Dev: "bw", Gw: netip.MustParseAddr(r.gw)}))
	}
	return l
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
	if err := tun.Do(l.inet, func() (err error) {
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
	if err := tun.Do(l.device, func() (err error) { c, err = net.DialTimeout("tcp", addr, 5*time.Second); return }); err != nil {
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
	if err := tun.Do(l.inet, func() (err error) { pc, err = net.ListenPacket("udp", addr); return }); err != nil {
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
// them on the device; it returns how many arrived.
func (l *shareLab) blast(t *testing.T, addr string, tos int, rate float64) int {
	t.Helper()
	var c net.Conn
	if err := tun.Do(l.device, func() (err error) { c, err = net.Dial("udp", addr); return }); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "%d %g", tos, rate)
	c.SetReadDeadline(time.Now().Add(1500 * time.Millisecond))
	buf := make([]byte, 1500)
	n := 0
	for {
		if _, err := c.Read(buf); err != nil {
			return n
		}
		n++
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
		tun.Do(l.device, func() error {
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
	if err := tun.Do(l.device, func() (err error) { c, err = net.DialTimeout("tcp", addr, d); return }); err != nil {
		t.Errorf("device: connect to %s: %v", addr, err)
		return 0
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(d))
	got, _ := io.ReadFull(c, make([]byte, n))
	return got
}

// ipRxBytes is the IP bytes the device received on eth0 (veth counts the
// 14-byte Ethernet header too).
func (l *shareLab) ipRxBytes(t *testing.T) uint64 {
	var n uint64
	if err := tun.Do(l.device, func() error {
		link, err := netlink.LinkByName("eth0")
		if err != nil {
			return err
		}
		s := link.Attrs().Statistics
		n = s.RxBytes - 14*s.RxPackets
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return n
}

func (l *shareLab) rateOver(t *testing.T, d time.Duration) float64 {
	b0, t0 := l.ipRxBytes(t), time.Now()
	time.Sleep(d)
	b1, t1 := l.ipRxBytes(t), time.Now()
	return float64(b1-b0) * 8 / t1.Sub(t0).Seconds()
}

// boxState is what share changes in the box: sysctls, addresses of the
// LAN, policy rules of the instance, nftables tables, devices.
func (l *shareLab) boxState(t *testing.T, name string) string {
	t.Helper()
	var b strings.Builder
	for _, k := range []string{"net/ipv4/ip_forward", "net/ipv6/conf/all/forwarding", "net/ipv4/conf/all/rp_filter", "net/ipv6/conf/bw/accept_ra"} {
		v, err := tun.ReadSysctl(l.box, k)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%s=%s ", k, v)
	}
	_, _, prio := hop.GatewayTables(name)
	if err := tun.Do(l.box, func() error {
		bl, err := netlink.LinkByName("bl")
		if err != nil {
			return err
		}
		addrs, err := netlink.AddrList(bl, netlink.FAMILY_ALL)
		if err != nil {
			return err
		}
		for _, a := range addrs {
			if !a.IP.IsLinkLocalUnicast() {
				fmt.Fprintf(&b, "addr(%v) ", a.IPNet)
			}
		}
		rules, err := netlink.RuleList(netlink.FAMILY_ALL)
		if err != nil {
			return err
		}
		for _, r := range rules {
			if r.Priority == prio {
				fmt.Fprintf(&b, "rule(%d iif %s table %d) ", r.Family, r.IifName, r.Table)
			}
		}
		links, err := netlink.LinkList()
		if err != nil {
			return err
		}
		for _, ln := range links {
			if strings.HasPrefix(ln.Attrs().Name, name) {
				fmt.Fprintf(&b, "link(%s) ", ln.Attrs().Name)
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if ok, err := tun.NftTableExists(l.box, "pi2hop-"+name); err != nil || ok {
		fmt.Fprintf(&b, "nft-table(%v %v) ", ok, err)
	}
	if _, err := os.Stat(instance.StatePath(name)); err == nil {
		b.WriteString("statefile ")
	}
	return b.String()
}

// lockedBuffer is a bytes.Buffer for a child's output read while it runs.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (w *lockedBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *lockedBuffer) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// startShare runs `pi2hop share` in the box and waits for its start-up
// text (printed once it serves) and control socket.
func (l *shareLab) startShare(t *testing.T, bin, name string, extra ...string) (*exec.Cmd, *lockedBuffer) {
	t.Helper()
	args := append([]string{"netns", "exec", l.box, bin, "share", "--name", name, "--lan", "bl", "--wan", "bw", "--dns", "10.254.30.2"}, extra...)
	cmd := exec.Command("ip", args...)
	out := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := os.Stat(instance.SocketPath(name))
		if err == nil && strings.Contains(out.String(), "Unthrottle") {
			return cmd, out
		}
		if time.Now().After(deadline) {
			t.Fatalf("pi2hop share did not start within 10 s:\n%s", out)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// dhcp runs udhcpc once on the device (-q: quit with the lease) and
// returns what it got: the script prints the lease's fields.
func (l *shareLab) dhcp(t *testing.T) map[string]string {
	t.Helper()
	dir := t.TempDir()
	script := filepath.Join(dir, "script")
	os.WriteFile(script, []byte(`#!/bin/sh
case "$1" in
deconfig) ip -4 addr flush dev "$interface" ;;
bound|renew)
	ip addr replace "$ip/$mask" dev "$interface"
	ip route replace default via "$router" dev "$interface"
	echo "ip=$ip router=$router dns=$dns lease=$lease" ;;
esac
`), 0o755)
	start := time.Now()
	cmd := exec.Command("ip", "netns", "exec", l.device, "udhcpc", "-q", "-f", "-i", "eth0", "-s", script, "-x", "hostname:phone", "-t", "5", "-T", "1", "-n")
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("udhcpc: %v\n%s", err, stderr.String())
	}
	took := time.Since(start)
	if took > 5*time.Second {
		t.Errorf("lease took %v, want within 5 s", took)
	}
	got := map[string]string{}
	sc := bufio.NewScanner(&out)
	for sc.Scan() {
		for _, f := range strings.Fields(sc.Text()) {
			k, v, _ := strings.Cut(f, "=")
			got[k] = v
		}
	}
	t.Logf("lease after %v: %v", took.Round(time.Millisecond), got)
	return got
}

func TestShareWholePath(t *testing.T) {
	needRoot(t, "ip", "udhcpc")
	bin := buildPi2hop(t)
	name := testInstance(8)
	os.Remove(instance.SharePath(name))
	t.Cleanup(func() { os.Remove(instance.SharePath(name)) })
	l := newShareLab(t, name)
	l.internet(t)
	before := l.boxState(t, name)
	t.Cleanup(func() { exec.Command("ip", "netns", "exec", l.box, bin, "share", "--cleanup", "--name", name).Run() })

	const rate = 20e6
	cmd, out := l.startShare(t, bin, name, "--rate", "20mbit", "--delay", "5ms")
	t.Logf("pi2hop share said:\n%s", out)
	for _, want := range []string{"192.168.2.0/24", "Settings > Developer > L4S", "defaults write -g network_enable_l4s -bool true",
		"pi2hop set --name " + name + " --rate unlimited", "share --cleanup --name " + name} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("start-up text lacks %q:\n%s", want, out)
		}
	}
	lease := l.dhcp(t)
	if lease["router"] != "192.168.2.1" || lease["dns"] != "192.168.2.1" || !strings.HasPrefix(lease["ip"], "192.168.2.") {
		t.Fatalf("lease %v: want an address of 192.168.2.0/24 with router and DNS 192.168.2.1", lease)
	}

	// A name resolves through the box's forwarder.
	var c net.Conn
	if err := tun.Do(l.device, func() (err error) { c, err = net.DialTimeout("udp", "192.168.2.1:53", 2*time.Second); return }); err != nil {
		t.Fatal(err)
	}
	m := new(dns.Msg)
	m.SetQuestion("www.test.", dns.TypeA)
	r, _, err := (&dns.Client{Timeout: 3 * time.Second}).ExchangeWithConn(m, &dns.Conn{Conn: c})
	c.Close()
	if err != nil || len(r.Answer) != 1 || r.Answer[0].(*dns.A).A.String() != "10.254.30.2" {
		t.Fatalf("www.test. from the device: %v %v", r, err)
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
	t.Logf("after set --rate unlimited: %.1f Mbit/s", got/1e6)
	if got < 5*rate {
		t.Errorf("unlimited: %.0f bit/s, want at least 5 x 20 Mbit/s", got)
	}
	if out, err := exec.Command(bin, "set", "--name", name, "--rate", "10mbit").CombinedOutput(); err != nil {
		t.Fatalf("set --rate 10mbit: %v\n%s", err, out)
	}
	time.Sleep(time.Second)
	got = l.rateOver(t, 2*time.Second)
	t.Logf("one second after set --rate 10mbit: %.2f Mbit/s", got/1e6)
	if got < 0.9*10e6 || got > 1.01*10e6 {
		t.Errorf("after set --rate 10mbit: %.0f bit/s, want 90..101 %% of 10 Mbit/s", got)
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
		got := l.blast(t, dst, 0x01, 20e6)
		m1, d1 := downCounts(t, bin, name)
		t.Logf("ECT(1) at 20 Mbit/s from %s: %d datagrams arrived, %d marked, %d dropped", dst, got, m1-m0, d1-d0)
		if got == 0 || m1 == m0 {
			t.Errorf("ECT(1) flow from %s: %d arrived, %d marks; want CE marks", dst, got, m1-m0)
		}
		got = l.blast(t, dst, 0x00, 20e6)
		m2, d2 := downCounts(t, bin, name)
		t.Logf("Not-ECT at 20 Mbit/s from %s: %d datagrams arrived, %d marked, %d dropped", dst, got, m2-m1, d2-d1)
		if got == 0 || m2 != m1 || d2 == d1 {
			t.Errorf("Not-ECT flow from %s: %d arrived, %d marks, %d drops; want drops and no mark", dst, got, m2-m1, d2-d1)
		}
	}

	// stats lists the device with its lease and bytes.
	sout, err := exec.Command(bin, "stats", "--name", name).CombinedOutput()
	t.Logf("pi2hop stats:\n%s", sout)
	if err != nil || !strings.Contains(string(sout), lease["ip"]) || !strings.Contains(string(sout), "phone") || !strings.Contains(string(sout), "MB") {
		t.Errorf("stats: %v; want the device %s (phone) with megabytes down", err, lease["ip"])
	}
	jout, err := exec.Command(bin, "stats", "--name", name, "--json").Output()
	var js struct {
		Clients []struct {
			Addr      string `json:"addr"`
			DownBytes uint64 `json:"down_bytes"`
		} `json:"clients"`
	}
	if err != nil || json.Unmarshal(jout, &js) != nil || len(js.Clients) != 1 || js.Clients[0].Addr != lease["ip"] || js.Clients[0].DownBytes < 1e6 {
		t.Errorf("stats --json clients: %v\n%s", err, jout)
	}

	cmd.Process.Signal(syscall.SIGTERM)
	if err := waitExit(t, cmd, 10*time.Second); err != nil {
		t.Errorf("pi2hop share after SIGTERM: %v\n%s", err, out)
	}
	if after := l.boxState(t, name); after != before {
		t.Errorf("after SIGTERM the box is\n  %s\nwas\n  %s", after, before)
	}

	// Restarted, the share gives the device its address again (the lease
	// table); SIGHUP takes everything down too.
	cmd, _ = l.startShare(t, bin, name)
	if again := l.dhcp(t); again["ip"] != lease["ip"] {
		t.Errorf("after a restart the device got %s, want its %s", again["ip"], lease["ip"])
	}
	cmd.Process.Signal(syscall.SIGHUP)
	if err := waitExit(t, cmd, 10*time.Second); err != nil {
		t.Errorf("pi2hop share after SIGHUP: %v", err)
	}
	if after := l.boxState(t, name); after != before {
		t.Errorf("after SIGHUP the box is\n  %s\nwas\n  %s", after, before)
	}

	// Killed: share --cleanup takes everything away.
	cmd, _ = l.startShare(t, bin, name)
	cmd.Process.Kill()
	waitExit(t, cmd, 10*time.Second)
	if out, err := exec.Command("ip", "netns", "exec", l.box, bin, "share", "--cleanup", "--name", name).CombinedOutput(); err != nil {
		t.Fatalf("share --cleanup: %v\n%s", err, out)
	}
	if after := l.boxState(t, name); after != before {
		t.Errorf("after SIGKILL and share --cleanup the box is\n  %s\nwas\n  %s", after, before)
	}
}

// The idle RTT through share is the path's: 2 x --delay, plus at most 0.3
// ms of hop (the median of 40 pings, timed by kernel receive timestamps).
// Timing: on a loaded 2-core machine the gateway path measures more; run
// it alone on a quiet one.
func TestShareIdleRTT(t *testing.T) {
	needRoot(t, "ip", "udhcpc")
	bin := buildPi2hop(t)
	name := testInstance(9)
	os.Remove(instance.SharePath(name))
	t.Cleanup(func() { os.Remove(instance.SharePath(name)) })
	l := newShareLab(t, name)
	t.Cleanup(func() { exec.Command("ip", "netns", "exec", l.box, bin, "share", "--cleanup", "--name", name).Run() })
	cmd, _ := l.startShare(t, bin, name, "--rate", "100mbit", "--delay", "5ms")
	l.dhcp(t)
	dst := netip.MustParseAddr("10.254.30.2")             // MedianPing is IPv4 only
	hop.MedianPing(l.device, dst, 3, 10*time.Millisecond) // warm up: neighbours, conntrack
	rtt, err := hop.MedianPing(l.device, dst, 40, 10*time.Millisecond)
	t.Logf("idle RTT through share with --delay 5ms: median %v (added %v)", rtt, rtt-10*time.Millisecond)
	if err != nil || rtt < 10*time.Millisecond || rtt > 10*time.Millisecond+300*time.Microsecond {
		t.Errorf("idle RTT %v, %v; want 10 ms + at most 0.3 ms", rtt, err)
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
	needRoot(t, "ip")
	bin := buildPi2hop(t)
	name := testInstance(11)
	os.Remove(instance.SharePath(name))
	t.Cleanup(func() { os.Remove(instance.SharePath(name)) })
	l := newShareLab(t, name)
	before := l.boxState(t, name)
	share := func(extra ...string) string {
		t.Helper()
		args := append([]string{"netns", "exec", l.box, bin, "share", "--name", name, "--lan", "bl", "--wan", "bw", "--dns", "10.254.30.2"}, extra...)
		cmd := exec.Command("ip", args...)
		out := &lockedBuffer{}
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		if err := waitExit(t, cmd, 15*time.Second); err == nil {
			t.Errorf("share %v started:\n%s", extra, out)
		}
		if after := l.boxState(t, name); after != before {
			t.Errorf("refused share %v left\n  %s\nwas\n  %s", extra, after, before)
		}
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
	if err := tun.Do(l.device, func() (err error) {
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
