package hop_test

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/hop"
	"github.com/pi2hop/pi2hop/internal/hoststeal"
	"github.com/pi2hop/pi2hop/internal/labnet"
	"github.com/pi2hop/pi2hop/internal/ping"
	"github.com/pi2hop/pi2hop/internal/roottest"
	"github.com/pi2hop/pi2hop/internal/tunpair"
	"github.com/pi2hop/pi2hop/netsys"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// testPair is topology.Pair built here, below topology (which imports
// hop): the ends from tunpair with a hop running between them.
type testPair struct {
	*tunpair.Ends
	Hop *hop.Hop
	*tunpair.Running
}

// startTestPair builds namespaces prefix+"c" and prefix+"s" and starts
// a hop of cfg between them, with tap if not nil.
func startTestPair(cfg hop.Config, prefix string, tap hop.Tap) (*testPair, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	mtu := cfg.MTU
	if mtu == 0 {
		mtu = hop.DefaultMTU
	}
	ends, err := tunpair.Open(tunpair.Spec{ClientNS: prefix + "c", ServerNS: prefix + "s", MTU: mtu, Backend: cfg.TUN})
	if err != nil {
		return nil, err
	}
	h, err := hop.New(cfg, ends.Devs[0], ends.Devs[1])
	if err != nil {
		tunpair.Abandon(ends.Devs[:], ends.Journal)
		return nil, err
	}
	if tap != nil {
		h.SetTap(tap)
	}
	return &testPair{Ends: ends, Hop: h, Running: tunpair.Start(context.Background(), h, ends.Journal, h.Config().Logger)}, nil
}

func newTestPair(t *testing.T, cfg hop.Config) *testPair {
	t.Helper()
	return newTestPairWith(t, cfg, nil)
}

// newTestPairWith is newTestPair with tap (if not nil) on the hop.
func newTestPairWith(t *testing.T, cfg hop.Config, tap hop.Tap) *testPair {
	t.Helper()
	prefix := roottest.Name("p2t")
	p, err := startTestPair(cfg, prefix, tap)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Errorf("close pair: %v", err)
		}
		if netsys.NamespaceExists(p.ClientNS) || netsys.NamespaceExists(p.ServerNS) {
			t.Errorf("namespaces left behind")
		}
	})
	return p
}

// tcpRate runs a bulk TCP transfer client -> server and returns the IP
// rate the server's TUN received over window, after warmup, and what the
// sender's kernel and the host saw over the same window.
func tcpRate(t *testing.T, p *testPair, warmup, window time.Duration) (float64, rateWindow) {
	t.Helper()
	var ln net.Listener
	if err := p.InServer(func() (err error) {
		ln, err = net.Listen("tcp", netip.AddrPortFrom(p.ServerAddr, 5001).String())
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		io.Copy(io.Discard, c)
	}()
	var conn net.Conn
	if err := p.InClient(func() (err error) {
		conn, err = net.Dial("tcp", netip.AddrPortFrom(p.ServerAddr, 5001).String())
		return err
	}); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	go func() {
		buf := make([]byte, 64<<10)
		for {
			select {
			case <-stop:
				conn.Close()
				return
			default:
			}
			if _, err := conn.Write(buf); err != nil {
				return
			}
		}
	}()
	defer close(stop)
	time.Sleep(warmup)
	i0, steal0 := tcpInfo(t, conn), hoststeal.Total()
	b, _, dt, err := labnet.RxOver(p.ServerNS, p.ServerDev, 0, window) // a TUN counts no link header
	if err != nil {
		t.Fatal(err)
	}
	w := rateWindow{Sender: senderDelta(tcpInfo(t, conn), i0), Window: dt, Steal: -1}
	if steal1 := hoststeal.Total(); steal0 >= 0 && steal1 >= 0 {
		w.Steal = steal1 - steal0
	}
	return float64(b) * 8 / w.Window.Seconds(), w
}

// rateWindow is what a rate measurement saw besides the bytes.
type rateWindow struct {
	Sender senderWindow
	Window time.Duration
	Steal  time.Duration // host steal summed over the CPUs, -1 if unknown
}

func (w rateWindow) String() string {
	return fmt.Sprintf("%v; host steal %v in %v", w.Sender, w.Steal, w.Window.Round(time.Millisecond))
}

// checkTCPRate asks a bulk TCP transfer through the hop to fill the
// link: at least 95 % of it at the receiver, at most 100.5 % (more is a
// shaping error). One measurement, no second try: the window is long
// enough that an ordinary stall of the endpoints' CPU costs little of it
// (80 ms in 8 s is 1 %), while a hop that drops at its TUN ring or
// releases late falls well below 95 %. What the host steals is
// subtracted from the floor, at most one for one: while a vCPU is stolen
// the sender, owner or receiver on it stops, and the cwnd-limited
// transfer behind it stops with it, so a stolen ms costs the link at most
// a ms; the hop is not asked to forward while it is not running. Steal is
// summed over the CPUs, so a stall of both at once counts twice: the floor
// errs towards the hop by at most that.
func checkTCPRate(t *testing.T, got float64, bps uint64, w rateWindow) {
	t.Helper()
	ratio := got / float64(bps)
	floor := 0.95
	if w.Steal > 0 {
		floor -= w.Steal.Seconds() / w.Window.Seconds()
	}
	t.Logf("TCP at %d bit/s: received %.0f bit/s IP (%.2f %%, floor %.2f %%); %v", bps, got, 100*ratio, 100*floor, w)
	if ratio < floor || ratio > 1.005 {
		t.Errorf("IP rate at the receiver %.2f %% of the link rate, want %.2f..100.5 %% (95 %% less host steal)", 100*ratio, 100*floor)
	}
}

// senderWindow is what a TCP sender's kernel counted over a window: why a
// transfer fell short of the link, when it did (retransmission timeouts
// leave the link idle for at least 200 ms each; a sender limited by its
// buffer or the receiver's window does not fill it).
type senderWindow struct {
	Retrans, RTOs   uint32
	RTOTime         time.Duration // spent in RTO recovery
	Busy, Rwnd, Buf time.Duration // sending, limited by the receive window, by the send buffer
	MinRTT, RTT     time.Duration
}

func (w senderWindow) String() string {
	return fmt.Sprintf("sender: retransmitted %d, RTOs %d (%v in RTO recovery), busy %v, rwnd-limited %v, sndbuf-limited %v, min RTT %v, RTT %v",
		w.Retrans, w.RTOs, w.RTOTime, w.Busy, w.Rwnd, w.Buf, w.MinRTT, w.RTT)
}

// senderDelta is what the sender counted from start to end; the RTTs are
// end's.
func senderDelta(end, start *unix.TCPInfo) senderWindow {
	us := func(v uint64) time.Duration { return time.Duration(v) * time.Microsecond }
	return senderWindow{
		Retrans: end.Total_retrans - start.Total_retrans,
		RTOs:    uint32(end.Total_rto - start.Total_rto),
		RTOTime: time.Duration(end.Total_rto_time-start.Total_rto_time) * time.Millisecond,
		Busy:    us(end.Busy_time - start.Busy_time),
		Rwnd:    us(end.Rwnd_limited - start.Rwnd_limited),
		Buf:     us(end.Sndbuf_limited - start.Sndbuf_limited),
		MinRTT:  us(uint64(end.Min_rtt)),
		RTT:     us(uint64(end.Rtt)),
	}
}

// tcpInfo reads TCP_INFO of conn.
func tcpInfo(t *testing.T, conn net.Conn) *unix.TCPInfo {
	t.Helper()
	rc, err := conn.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var info *unix.TCPInfo
	var ierr error
	if err := rc.Control(func(fd uintptr) { info, ierr = unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO) }); err != nil {
		t.Fatal(err)
	}
	if ierr != nil {
		t.Fatal(ierr)
	}
	return info
}

// logDir logs what a rate test needs to tell a hop's fault (ring drops,
// late releases) from the sender's (an idle link with nothing queued).
func logDir(t *testing.T, d *hop.DirStats) {
	t.Helper()
	t.Logf("%s: in %d out %d drops %v nobuf %d ring %d util %.3f sojourn C p50 %v p99 %v prob %.4f, lateness p99 %v worst %v",
		d.Dir, d.In, d.Out, d.QueueDrops, d.NoBuffer, d.RingDrops, d.Utilisation(),
		time.Duration(d.SojournC.Quantile(0.5)), time.Duration(d.SojournC.Quantile(0.99)), aqm.ProbFloat(d.Queue.Prob),
		time.Duration(d.Lateness.Quantile(0.99)), time.Duration(d.Worst.Max))
}

// medianPing pings the server from the client (answered by the server's
// kernel) n times, 10 ms apart, and returns the median RTT.
func medianPing(t *testing.T, p *testPair, n int) time.Duration {
	t.Helper()
	rtt, err := ping.Median(p.ClientNS, p.ServerAddr, n, 10*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	return rtt
}

func TestPairIdleRTT(t *testing.T) {
	roottest.Need(t)
	for _, tt := range []struct {
		delay time.Duration
		bps   uint64
	}{{10 * time.Millisecond, 100_000_000}, {0, 100_000_000}} {
		t.Run(fmt.Sprintf("delay%v", tt.delay), func(t *testing.T) {
			p := newTestPair(t, hop.TestConfig(tt.bps, tt.delay))
			medianPing(t, p, 3) // warm up
			// The kernel's own path between two namespaces, measured
			// while the hop runs (so under its CPU latency request too):
			// what the machine charges a ping that crosses no hop at all.
			kernel := vethPathRTT(t, 60)
			// The median of 60 pings, one measurement: a stall of the VM
			// delays a few pings, and the median does not move unless
			// more than half of them are late.
			m, err := ping.Measure(p.ClientNS, p.ServerAddr, 60, 10*time.Millisecond)
			if err != nil {
				t.Fatal(err)
			}
			added := m.Median - 2*tt.delay
			s := p.Hop.Stats()
			t.Logf("release lateness p50 %v p99 %v", time.Duration(s.Up.Lateness.Quantile(0.5)), time.Duration(s.Up.Lateness.Quantile(0.99)))
			t.Logf("idle RTT with %v each way at %d bit/s: median %v (added %v; the kernel's veth path alone %v, so the hop's own part %v; host steal %v)",
				tt.delay, tt.bps, m.Median, added, kernel, added-kernel, m.Steal)
			// The bound is what a correct hop may cost on a VM, not a target:
			// a ping crosses the hop twice and may wake halted vCPUs several
			// times, each wake-up through the host taking up to about 0.1 ms,
			// plus the release lateness. Over 1 ms means a release missed its
			// time, unless the host took the CPUs long enough to explain it
			// (ping.Idle.StealAllowance). The figure itself is bench-hop's
			// idle-RTT line; what it was measured at, against the kernel path
			// and a minimal forwarder between the same TUNs, is in
			// docs/performance.md.
			if bound := time.Millisecond + m.StealAllowance(); added < 0 || added > bound {
				t.Errorf("RTT %v, want %v + at most %v (1 ms and what the host's steal of %v explains)", m.Median, 2*tt.delay, bound, m.Steal)
			}
		})
	}
}

// vethPathRTT is the median RTT of n pings between two fresh namespaces
// joined by a veth pair: the kernel's path without the hop, the
// reference the hop's idle RTT is judged against.
func vethPathRTT(t *testing.T, n int) time.Duration {
	t.Helper()
	prefix := roottest.Name("p2v")
	a, b := prefix+"a", prefix+"b"
	j := netsys.NewJournal(nil)
	t.Cleanup(func() {
		if err := j.Undo(); err != nil {
			t.Errorf("remove the veth path: %v", err)
		}
	})
	for _, f := range []func() error{
		func() error { return j.NewNamespace(a) },
		func() error { return j.NewNamespace(b) },
		func() error { return j.AddVeth(a, "va", b, "vb") },
		func() error { return j.AddAddr(a, "va", netip.MustParsePrefix("10.254.9.1/24")) },
		func() error { return j.AddAddr(b, "vb", netip.MustParsePrefix("10.254.9.2/24")) },
	} {
		if err := f(); err != nil {
			t.Fatal(err)
		}
	}
	dst := netip.MustParseAddr("10.254.9.2")
	if _, err := ping.Median(a, dst, 3, 10*time.Millisecond); err != nil { // warm up: neighbours
		t.Fatal(err)
	}
	rtt, err := ping.Median(a, dst, n, 10*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	return rtt
}

// snmpField returns a counter from /proc/thread-self/net/{snmp,netstat}
// of the calling thread's namespace, e.g. ("netstat", "IpExt", "InCsumErrors").
func snmpField(file, group, field string) (uint64, error) {
	f, err := os.Open("/proc/thread-self/net/" + file)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	var names []string
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 || fields[0] != group+":" {
			continue
		}
		if names == nil {
			names = fields
			continue
		}
		for i, n := range names {
			if n == field && i < len(fields) {
				return strconv.ParseUint(fields[i], 10, 64)
			}
		}
	}
	return 0, fmt.Errorf("%s %s %s not found", file, group, field)
}

// ecnOf is the ECN field of the datagram whose control messages are oob,
// read with IP_RECVTOS or IPV6_RECVTCLASS on; the traffic class is an int
// in host order (RFC 3542).
func ecnOf(oob []byte) (aqm.ECN, bool) {
	msgs, _ := unix.ParseSocketControlMessage(oob)
	for _, m := range msgs {
		switch {
		case m.Header.Level == unix.IPPROTO_IP && m.Header.Type == unix.IP_TOS && len(m.Data) >= 1:
			return aqm.ECN(m.Data[0] & 3), true
		case m.Header.Level == unix.IPPROTO_IPV6 && m.Header.Type == unix.IPV6_TCLASS && len(m.Data) >= 4:
			return aqm.ECN(binary.NativeEndian.Uint32(m.Data) & 3), true
		}
	}
	return 0, false
}

// ecnSink listens at addr in p's server namespace with a receive buffer of
// size bytes (socket option bufOpt), asks for each datagram's ECN field,
// and hands got every datagram it reads until rc is closed; done closes
// after the last.
func ecnSink(t *testing.T, p *testPair, addr netip.AddrPort, bufOpt, size int, got func(b []byte, e aqm.ECN, ok bool)) (rc *net.UDPConn, done <-chan struct{}) {
	t.Helper()
	if err := p.InServer(func() (err error) { rc, err = net.ListenUDP(udpNetwork(addr), net.UDPAddrFromAddrPort(addr)); return }); err != nil {
		t.Fatal(err)
	}
	roottest.Control(t, rc, func(fd int) error {
		if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, bufOpt, size); err != nil {
			return err
		}
		if addr.Addr().Is6() {
			return unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_RECVTCLASS, 1)
		}
		return unix.SetsockoptInt(fd, unix.IPPROTO_IP, unix.IP_RECVTOS, 1)
	})
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		buf, oob := make([]byte, 2048), make([]byte, 128)
		for {
			n, oobn, _, _, err := rc.ReadMsgUDP(buf, oob)
			if err != nil {
				return
			}
			e, ok := ecnOf(oob[:oobn])
			got(buf[:n], e, ok)
		}
	}()
	return rc, closed
}

// udpNetwork is the network of addr's family, so a socket is only that.
func udpNetwork(addr netip.AddrPort) string {
	if addr.Addr().Is6() {
		return "udp6"
	}
	return "udp4"
}

// ecnSource dials addr from p's client namespace, every datagram sent
// with codepoint ecn.
func ecnSource(t *testing.T, p *testPair, addr netip.AddrPort, ecn aqm.ECN) *net.UDPConn {
	t.Helper()
	var sc *net.UDPConn
	if err := p.InClient(func() (err error) {
		sc, err = net.DialUDP(udpNetwork(addr), nil, net.UDPAddrFromAddrPort(addr))
		return
	}); err != nil {
		t.Fatal(err)
	}
	roottest.Control(t, sc, func(fd int) error {
		if addr.Addr().Is6() {
			return unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_TCLASS, int(ecn))
		}
		return unix.SetsockoptInt(fd, unix.IPPROTO_IP, unix.IP_TOS, int(ecn))
	})
	return sc
}

// ecnFlood offers UDP with the given ECN codepoint at bps for d from the
// client and counts, at the server, datagrams by the ECN they arrived with.
// mid, if not nil, is called half way through.
func ecnFlood(t *testing.T, p *testPair, v6 bool, ecn aqm.ECN, bps uint64, d time.Duration, mid func()) (got [4]int) {
	t.Helper()
	server := p.ServerAddr
	if v6 {
		server = p.ServerAddr6
	}
	addr := netip.AddrPortFrom(server, 9000)
	rc, done := ecnSink(t, p, addr, unix.SO_RCVBUF, 4<<20, func(_ []byte, e aqm.ECN, ok bool) {
		if ok {
			got[e]++
		}
	})
	defer rc.Close()
	sc := ecnSource(t, p, addr, ecn)
	payload := make([]byte, 1200)
	pktBits := float64(8 * (len(payload) + 28))
	if v6 {
		pktBits += 8 * 20
	}
	gap := time.Duration(pktBits / float64(bps) * 1e9)
	start := time.Now()
	for i := 0; time.Since(start) < d; i++ {
		if mid != nil && time.Since(start) > d/2 {
			mid()
			mid = nil
		}
		sc.Write(payload)
		if ahead := time.Duration(i+1)*gap - time.Since(start); ahead > time.Millisecond {
			time.Sleep(ahead)
		}
	}
	sc.Close()
	time.Sleep(300 * time.Millisecond) // drain the queue
	rc.Close()
	<-done
	return got
}

// TestPairMarking floods DualPI2 over IPv6 at twice the link's rate:
// ECT(1) is marked and the PI holds the L queue near its target in
// overload; Not-ECT is dropped, never marked. IPv4 is the family of the
// other marking tests: TestPairQueueKinds counts the same marks and drops
// by reason, TestBackendMarksSegments its receivers' checksum errors; the
// queue's delay does not depend on the family.
func TestPairMarking(t *testing.T) {
	roottest.Need(t)
	const bps = 10_000_000
	const v6 = true
	t.Run("IPv6", func(t *testing.T) {
		p := newTestPair(t, hop.TestConfig(bps, 0))

		var half hop.DirStats
		got := ecnFlood(t, p, v6, aqm.ECT1, 2*bps, 3*time.Second, func() { half = p.Hop.Stats().Up })
		s := p.Hop.Stats().Up
		// The second half: p' has settled.
		steady := s.SojournL.Sub(&half.SojournL)
		p99 := time.Duration(steady.Quantile(0.99))
		t.Logf("ECT(1) at 2x: received ECT(1) %d CE %d; hop marked %d, dropped %v; L sojourn p50 %v p99 %v (second half), p99 %v (all)",
			got[aqm.ECT1], got[aqm.CE], s.Marked, s.QueueDrops, time.Duration(steady.Quantile(0.5)), p99, time.Duration(s.SojournL.Quantile(0.99)))
		if got[aqm.CE] == 0 || uint64(got[aqm.CE]) > s.Marked {
			t.Errorf("%d CE at the receiver, %d marked by the hop; want some, no more than marked", got[aqm.CE], s.Marked)
		}
		// An unresponsive ECT(1) flow at twice the rate is not slowed by
		// marks: p' rises into overload (k·p' > 1), where L packets are
		// dropped with p'² and the PI holds the larger queue delay at its
		// target (sch_dualpi2). The step threshold cannot bound this
		// queue; the PI must keep it near target instead of letting it
		// grow to the limit (10000 packets, seconds).
		target := time.Duration(aqm.DefaultConfig().Target)
		if p50 := time.Duration(steady.Quantile(0.5)); p50 > 2*target {
			t.Errorf("L-queue sojourn p50 %v in the second half, want <= %v (2 × target)", p50, 2*target)
		}
		if s.QueueDrops[aqm.ReasonOverload] == 0 {
			t.Errorf("no overload drops with ECT(1) at twice the rate")
		}

		marked0 := s.Marked
		got = ecnFlood(t, p, v6, aqm.NotECT, 2*bps, 2*time.Second, nil)
		s = p.Hop.Stats().Up
		t.Logf("Not-ECT at 2x: received %v; drops %v", got, s.QueueDrops)
		if got[aqm.CE] != 0 || s.Marked != marked0 {
			t.Errorf("Not-ECT packets marked: %d CE received, hop marks %d -> %d", got[aqm.CE], marked0, s.Marked)
		}
		if s.Dropped() == 0 {
			t.Errorf("no drops with Not-ECT offered at twice the rate")
		}
		hop.CheckBalance(t, s)
	})
}

// TestPairMalformedPacketsKeepForwarding writes malformed packets into the
// client's TUN with a packet socket (as if the client's kernel had sent
// them) and checks they are counted and that forwarding goes on.
func TestPairMalformedPacketsKeepForwarding(t *testing.T) {
	roottest.Need(t)
	p := newTestPair(t, hop.TestConfig(100_000_000, 0))
	bad := [][]byte{
		{0x45, 0, 0, 10}, // truncated IPv4
		append([]byte{0x43}, make([]byte, 59)...),                      // IHL 3
		append([]byte{0x60, 0, 0, 0, 0xff, 0xff}, make([]byte, 40)...), // IPv6 payload length past the end
		[]byte("definitely not an IP packet"),
	}
	err := p.InClient(func() error {
		l, err := netlink.LinkByName(p.ClientDev)
		if err != nil {
			return err
		}
		proto := int(htons(unix.ETH_P_IP))
		fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_DGRAM, proto)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		to := &unix.SockaddrLinklayer{Ifindex: l.Attrs().Index, Protocol: htons(unix.ETH_P_IP)}
		for _, b := range bad {
			if err := unix.Sendto(fd, b, 0, to); err != nil {
				return fmt.Errorf("sendto: %w", err)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	rtt := medianPing(t, p, 5)
	s := p.Hop.Stats().Up
	t.Logf("after %d malformed packets: malformed %d, write errors %d, ping %v", len(bad), s.Malformed, s.WriteErrors, rtt)
	if s.Malformed < uint64(len(bad)) {
		t.Errorf("malformed = %d, want >= %d", s.Malformed, len(bad))
	}
	hop.CheckBalance(t, s)
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }
