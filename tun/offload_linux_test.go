package tun

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pi2hop/pi2hop/internal/roottest"
	"github.com/pi2hop/pi2hop/netsys"
	"golang.org/x/sys/unix"
)

// offloadPair is two namespaces, each routing everything into its own
// offload TUN, and a forwarder copying packets between the two devices in
// batches: reads are split into segments, writes coalesced.
type offloadPair struct {
	nsA, nsB string
	a, b     Device
	addrA    [2]netip.Addr // IPv4, IPv6
	addrB    [2]netip.Addr
	wg       sync.WaitGroup
	errs     chan error
	partial  bool // forward with TryReadPartial and WritePartial
}

func newOffloadPair(t *testing.T, backend Backend, partial bool) *offloadPair {
	t.Helper()
	j := netsys.NewJournal(nil)
	p := &offloadPair{nsA: roottest.Name("p2t"), nsB: roottest.Name("p2t"), errs: make(chan error, 2), partial: partial}
	p.addrA = [2]netip.Addr{netip.MustParseAddr("10.253.0.2"), netip.MustParseAddr("fd00:253::2")}
	p.addrB = [2]netip.Addr{netip.MustParseAddr("10.253.0.1"), netip.MustParseAddr("fd00:253::1")}
	var devs []Device
	t.Cleanup(func() {
		for _, d := range devs {
			d.Close()
		}
		p.wg.Wait()
		if err := j.Undo(); err != nil {
			t.Errorf("undo: %v", err)
		}
	})
	for _, end := range []struct {
		ns    string
		addrs [2]netip.Addr
	}{{p.nsA, p.addrA}, {p.nsB, p.addrB}} {
		if err := j.NewNamespace(end.ns); err != nil {
			t.Fatal(err)
		}
		d, err := openIn(j, end.ns, "p2o0", 1500, backend)
		if err != nil {
			t.Fatal(err)
		}
		devs = append(devs, d)
		if err := j.AddAddr(end.ns, "p2o0", netip.PrefixFrom(end.addrs[0], 24)); err != nil {
			t.Fatal(err)
		}
		if err := j.AddAddr(end.ns, "p2o0", netip.PrefixFrom(end.addrs[1], 64)); err != nil {
			t.Fatal(err)
		}
	}
	p.a, p.b = devs[0], devs[1]
	for _, d := range devs {
		t.Logf("%s: %s", d.Name(), d.(Describer).Backend())
	}
	p.wg.Add(2)
	go p.forward(p.a, p.b)
	go p.forward(p.b, p.a)
	return p
}

// forward copies batches from src to dst until src is closed.
func (p *offloadPair) forward(src, dst Device) {
	defer p.wg.Done()
	bufs := make([][]byte, 64)
	pkts := make([][]byte, 64)
	sizes := make([]int, 64)
	for i := range bufs {
		bufs[i] = make([]byte, 1536)
	}
	part := make([]bool, 64)
	for {
		var n int
		var err error
		if p.partial {
			n, err = p.readPartial(src, bufs, sizes, part)
		} else {
			n, err = src.Read(bufs, sizes)
		}
		for i := 0; i < n; i++ {
			pkts[i] = bufs[i][:sizes[i]]
		}
		for done := 0; done < n; {
			var w int
			var werr error
			if p.partial {
				w, werr = dst.(PartialWriter).WritePartial(pkts[done:n], part[done:n])
			} else {
				w, werr = dst.Write(pkts[done:n])
			}
			done += w
			if werr != nil {
				if errors.Is(werr, os.ErrClosed) {
					return
				}
				done++ // the kernel refused one packet (a route not up yet): drop it
			}
		}
		if err != nil {
			if !errors.Is(err, os.ErrClosed) {
				p.errs <- err
			}
			return
		}
	}
}

// readPartial is Read for the partial forwarder: TryReadPartial, waiting
// in poll(2) while nothing is there (in steps of 100 ms, so a closed
// device ends it).
func (p *offloadPair) readPartial(src Device, bufs [][]byte, sizes []int, part []bool) (int, error) {
	r := src.(PartialReader)
	for {
		n, err := r.TryReadPartial(bufs, sizes, part)
		if n > 0 || err != nil {
			return n, err
		}
		fds := []unix.PollFd{{Fd: int32(r.PollFd()), Events: unix.POLLIN}}
		if _, err := unix.Poll(fds, 100); err != nil && err != unix.EINTR {
			return 0, err
		}
	}
}

// snmpCounter reads one counter of /proc/net/snmp (or snmp6) as the
// calling thread's namespace sees it.
func snmpCounter(file, proto, name string) (uint64, error) {
	f, err := os.Open("/proc/thread-self/net/" + file)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	var header []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 {
			continue
		}
		if file == "snmp6" { // "Udp6InCsumErrors 0"
			if fields[0] == proto+name && len(fields) == 2 {
				return strconv.ParseUint(fields[1], 10, 64)
			}
			continue
		}
		if fields[0] != proto+":" {
			continue
		}
		if header == nil {
			header = fields
			continue
		}
		for i := range header {
			if header[i] == name && i < len(fields) {
				return strconv.ParseUint(fields[i], 10, 64)
			}
		}
	}
	return 0, fmt.Errorf("%s: no %s %s", file, proto, name)
}

// sendChecked runs send for IPv4 (fam 0) and IPv6 (fam 1) and fails t
// if the receiving namespace counted a checksum error meanwhile.
func sendChecked(t *testing.T, p *offloadPair, send func(fam int)) {
	t.Helper()
	before := csumErrors(t, p.nsB)
	for fam := 0; fam < 2; fam++ {
		send(fam)
	}
	after := csumErrors(t, p.nsB)
	for k, v := range before {
		if after[k] != v {
			t.Errorf("%s InCsumErrors %d -> %d", k, v, after[k])
		}
	}
}

// offloadStats returns, and logs, the offload counters of both devices.
func (p *offloadPair) offloadStats(t *testing.T) (a, b OffloadStats) {
	t.Helper()
	a, b = p.a.(OffloadCounter).OffloadStats(), p.b.(OffloadCounter).OffloadStats()
	t.Logf("A: %+v", a)
	t.Logf("B: %+v", b)
	return a, b
}

// csumErrors returns the receiving namespace's checksum error counters:
// TCP and UDP over IPv4 (snmp, shared by both families for TCP) and UDP
// over IPv6.
func csumErrors(t *testing.T, ns string) map[string]uint64 {
	t.Helper()
	out := map[string]uint64{}
	err := netsys.Do(ns, func() error {
		for _, c := range []struct{ file, proto string }{{"snmp", "Tcp"}, {"snmp", "Udp"}, {"snmp6", "Udp6"}} {
			v, err := snmpCounter(c.file, c.proto, "InCsumErrors")
			if err != nil {
				return err
			}
			out[c.proto] = v
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// openTestOffload opens offload device p2o0 (MTU 1500) in a namespace of
// its own, both gone when t ends, and returns the journal and namespace
// for more.
func openTestOffload(t *testing.T) (Device, *netsys.Journal, string) {
	t.Helper()
	j, ns := testNamespace(t)
	d, err := openIn(j, ns, "p2o0", 1500, BackendOffload)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d, j, ns
}

func TestOffloadOpensWithTSO(t *testing.T) {
	roottest.Need(t)
	d, j, ns := openTestOffload(t)
	od, ok := d.(*offloadDevice)
	if !ok {
		t.Fatalf("backend %s, want the offload one", d.(Describer).Backend())
	}
	want := OffloadCsum | OffloadTSO4 | OffloadTSO6
	if od.Offloads()&want != want {
		t.Errorf("offloads %v, want at least %v", od.Offloads(), want)
	}
	t.Logf("kernel accepted: %v", od.Offloads())
	w, err := openIn(j, ns, "p2o1", 1500, BackendPlain)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if got := w.(Describer).Backend(); got != "plain" {
		t.Errorf("plain backend says %q", got)
	}
}

// forwardCases are the device pairs the forwarding tests run through:
// the offload backend with checksums completed on read, the same with
// them left partial from read to write, and the plain fallback.
var forwardCases = []struct {
	name    string
	backend Backend
	partial bool
}{{"offload", BackendOffload, false}, {"offload-partial", BackendOffload, true}, {"plain", BackendPlain, false}}

// TCP in both families through two offload TUNs: the sender's TSO
// super-packets are split, written back coalesced, and arrive intact with
// no checksum error counted by the receiving kernel; also with the
// segments' checksums left partial from read to write (PartialReader).
func TestOffloadForwardsTCP(t *testing.T) {
	roottest.Need(t)
	for _, tc := range forwardCases {
		backend := tc.backend
		t.Run(tc.name, func(t *testing.T) {
			p := newOffloadPair(t, backend, tc.partial)
			sendChecked(t, p, func(fam int) { sendTCP(t, p, fam, 8<<20) })
			if backend != BackendOffload {
				return
			}
			sa, sb := p.offloadStats(t)
			if sa.SuperPackets == 0 || sa.Segments <= sa.SuperPackets {
				t.Errorf("sender side read %d super-packets, %d segments: want TSO super-packets split", sa.SuperPackets, sa.Segments)
			}
			if sb.Coalesced == 0 || sb.CoalescedSegments < 2*sb.Coalesced {
				t.Errorf("receiver side wrote %d super-packets of %d segments: want coalesced writes", sb.Coalesced, sb.CoalescedSegments)
			}
			if d := sa.Dropped() + sb.Dropped(); d != 0 || sa.Refused+sb.Refused != 0 {
				t.Errorf("dropped %d, refused %d", d, sa.Refused+sb.Refused)
			}
		})
	}
}

// sendTCP sends n pseudo-random bytes from A to B over family fam (0 IPv4,
// 1 IPv6) and checks that B received exactly them.
func sendTCP(t *testing.T, p *offloadPair, fam int, n int) {
	t.Helper()
	data := make([]byte, n)
	r := rand.New(rand.NewPCG(uint64(fam), 1))
	for i := range data {
		data[i] = byte(r.Uint32())
	}
	var ln net.Listener
	err := netsys.Do(p.nsB, func() (err error) {
		ln, err = net.Listen("tcp", netip.AddrPortFrom(p.addrB[fam], 0).String())
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	got := make(chan []byte, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- nil
			return
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(30 * time.Second))
		b, _ := io.ReadAll(c)
		got <- b
	}()
	var c net.Conn
	err = netsys.Do(p.nsA, func() (err error) {
		d := net.Dialer{Timeout: 10 * time.Second}
		c, err = d.DialContext(context.Background(), "tcp", ln.Addr().String())
		return err
	})
	if err != nil {
		t.Fatalf("dial %v: %v", ln.Addr(), err)
	}
	c.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := c.Write(data); err != nil {
		t.Fatalf("write: %v", err)
	}
	c.Close()
	select {
	case b := <-got:
		if !bytes.Equal(b, data) {
			t.Errorf("family %d: received %d bytes, want the %d sent, unchanged", fam, len(b), len(data))
		}
	case <-time.After(40 * time.Second):
		t.Fatalf("family %d: receiver did not finish within 40 s", fam)
	}
}

// UDP with UDP_SEGMENT (GSO) and an ECN codepoint: every datagram arrives
// as sent, with its ToS, and no checksum error is counted; also with
// partial checksums from read to write.
func TestOffloadForwardsUDPGSO(t *testing.T) {
	roottest.Need(t)
	for _, tc := range forwardCases {
		backend := tc.backend
		t.Run(tc.name, func(t *testing.T) {
			p := newOffloadPair(t, backend, tc.partial)
			sendChecked(t, p, func(fam int) { sendUDPGSO(t, p, fam) })
			if backend != BackendOffload {
				return
			}
			sa, sb := p.offloadStats(t)
			if off := p.a.(*offloadDevice).Offloads(); off&(OffloadUSO4|OffloadUSO6) != 0 {
				if sa.SuperPackets == 0 || sb.Coalesced == 0 {
					t.Errorf("with USO: %d super-packets read, %d written; want both", sa.SuperPackets, sb.Coalesced)
				}
			}
		})
	}
}

func sendUDPGSO(t *testing.T, p *offloadPair, fam int) {
	t.Helper()
	const (
		segSize = 1200
		perSend = 10
		sends   = 50
		ect1    = 0x01
	)
	var rc *net.UDPConn
	err := netsys.Do(p.nsB, func() (err error) {
		rc, err = net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.AddrPortFrom(p.addrB[fam], 0)))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	rc.SetReadBuffer(8 << 20)
	roottest.Control(t, rc, func(fd int) error {
		if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, 8<<20); err != nil {
			return err
		}
		if fam == 0 {
			return unix.SetsockoptInt(fd, unix.IPPROTO_IP, unix.IP_RECVTOS, 1)
		}
		return unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_RECVTCLASS, 1)
	})
	var sc *net.UDPConn
	err = netsys.Do(p.nsA, func() (err error) {
		sc, err = net.DialUDP("udp", nil, rc.LocalAddr().(*net.UDPAddr))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	roottest.Control(t, sc, func(fd int) error {
		if err := unix.SetsockoptInt(fd, unix.SOL_UDP, unix.UDP_SEGMENT, segSize); err != nil {
			return err
		}
		if fam == 0 {
			return unix.SetsockoptInt(fd, unix.IPPROTO_IP, unix.IP_TOS, ect1)
		}
		return unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_TCLASS, ect1)
	})
	msg := make([]byte, segSize*perSend-100) // the last datagram of each send is short
	for s := 0; s < sends; s++ {
		for i := range msg {
			msg[i] = byte(s + i)
		}
		if _, err := sc.Write(msg); err != nil {
			t.Fatalf("send %d: %v", s, err)
		}
		time.Sleep(time.Millisecond) // a socket buffer's worth never piles up
	}
	buf := make([]byte, 2048)
	oob := make([]byte, 128)
	count, tosOK := 0, 0
	rc.SetReadDeadline(time.Now().Add(10 * time.Second))
	for count < sends*perSend {
		n, oobn, _, _, err := rc.ReadMsgUDP(buf, oob)
		if err != nil {
			t.Fatalf("family %d: %d of %d datagrams received: %v", fam, count, sends*perSend, err)
		}
		want := segSize
		if count%perSend == perSend-1 {
			want = segSize - 100
		}
		s, i := count/perSend, (count%perSend)*segSize
		if n != want || buf[0] != byte(s+i) || buf[n-1] != byte(s+i+n-1) {
			t.Fatalf("family %d: datagram %d: %d bytes starting %d, want %d starting %d", fam, count, n, buf[0], want, byte(s+i))
		}
		if tos, ok := recvTOS(oob[:oobn]); ok && tos&3 == ect1 {
			tosOK++
		}
		count++
	}
	if tosOK != count {
		t.Errorf("family %d: %d of %d datagrams arrived ECT(1)", fam, tosOK, count)
	}
}

// recvTOS finds the ToS / Traffic Class in received control messages.
func recvTOS(oob []byte) (uint8, bool) {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return 0, false
	}
	for _, m := range msgs {
		switch {
		case m.Header.Level == unix.IPPROTO_IP && m.Header.Type == unix.IP_TOS && len(m.Data) >= 1:
			return m.Data[0], true
		case m.Header.Level == unix.IPPROTO_IPV6 && m.Header.Type == unix.IPV6_TCLASS && len(m.Data) >= 4:
			return uint8(binary.NativeEndian.Uint32(m.Data)), true // an int in host order
		}
	}
	return 0, false
}

// The device's read and write paths allocate nothing: a coalesced write,
// a single write and a read that finds nothing waiting.
func TestOffloadDeviceAllocatesNothing(t *testing.T) {
	roottest.Need(t)
	d, _, _ := openTestOffload(t)
	p := d.(Pollable)
	f := flow{flags: tcpACK, seq: 1, id: 1} // to 10.9.0.2: no route there, the kernel drops them
	super := f.packet(payload(20*1400, 1), true)
	var s splitter
	h := f.vnet(1400)
	s.start(&h, super)
	var pkts [][]byte
	for s.pending() {
		b := make([]byte, 1536)
		n, _ := s.next(b, false)
		pkts = append(pkts, b[:n])
	}
	bufs, sizes := [][]byte{make([]byte, 1536), make([]byte, 1536)}, make([]int, 2)
	allocs := testing.AllocsPerRun(50, func() {
		if _, err := p.Write(pkts); err != nil {
			t.Fatal(err)
		}
		if _, err := p.Write(pkts[:1]); err != nil {
			t.Fatal(err)
		}
		p.TryRead(bufs, sizes)
	})
	if allocs != 0 {
		t.Errorf("%v allocations per write and read, want 0", allocs)
	}
	if st := d.(OffloadCounter).OffloadStats(); st.Coalesced == 0 {
		t.Errorf("no coalesced write: %+v", st)
	}
}

// Reading allocates nothing either: a USO super-packet the namespace's
// stack sends into the device, split into its segments over two calls
// (the second takes what did not fit the first's buffers), and a single
// datagram whose partial checksum is completed.
func TestOffloadReadAllocatesNothing(t *testing.T) {
	roottest.Need(t)
	j, ns := testNamespace(t)
	// No IPv6 in the namespace: its router solicitations and MLD reports
	// would be read in place of the packets counted here.
	err := netsys.Do(ns, func() error {
		for _, c := range []string{"all", "default"} {
			if err := os.WriteFile("/proc/sys/net/ipv6/conf/"+c+"/disable_ipv6", []byte("1"), 0o644); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	d, err := openIn(j, ns, "p2o0", 1500, BackendOffload)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	// Without USO (Linux < 6.2) the stack cuts the datagrams itself and
	// the device reads 8 single packets per send instead.
	uso := d.(*offloadDevice).Offloads()&OffloadUSO4 != 0
	if err := j.AddAddr(ns, "p2o0", netip.MustParsePrefix("10.9.0.1/24")); err != nil {
		t.Fatal(err)
	}
	// A socket sending to 10.9.0.2, which the namespace routes into the
	// device: UDP_SEGMENT turns each send of 8 x 1200 bytes into one
	// super-packet.
	var fd int
	err = netsys.Do(ns, func() error {
		var err error
		if fd, err = unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0); err != nil {
			return err
		}
		if err := unix.SetsockoptInt(fd, unix.SOL_UDP, unix.UDP_SEGMENT, 1200); err != nil {
			return err
		}
		return unix.Connect(fd, &unix.SockaddrInet4{Port: 9, Addr: [4]byte{10, 9, 0, 2}})
	})
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	p := d.(Pollable)
	super, single := make([]byte, 8*1200), make([]byte, 100)
	bufs, sizes := make([][]byte, 5), make([]int, 5)
	for i := range bufs {
		bufs[i] = make([]byte, 1536)
	}
	// read takes want packets in calls of at most 5, within a deadline
	// (the kernel queues the packet on the device at once, but say so).
	read := func(want int) {
		got := 0
		for deadline := time.Now().Add(2 * time.Second); got < want; {
			n, err := p.TryRead(bufs[:min(5, want-got)], sizes)
			if err != nil {
				t.Fatal(err)
			}
			got += n
			if n == 0 && time.Now().After(deadline) {
				t.Fatalf("read %d of %d packets in 2 s", got, want)
			}
		}
	}
	step := func() {
		if _, err := unix.Write(fd, super); err != nil {
			t.Fatal(err)
		}
		read(8)
		if _, err := unix.Write(fd, single); err != nil {
			t.Fatal(err)
		}
		read(1)
	}
	step()
	if allocs := testing.AllocsPerRun(50, step); allocs != 0 {
		t.Errorf("%v allocations per super-packet and single packet read, want 0", allocs)
	}
	st := d.(OffloadCounter).OffloadStats()
	switch {
	case st.Dropped() != 0:
		t.Errorf("counters %+v: want no drop", st)
	// 52 steps: ours, AllocsPerRun's warm-up, its 50.
	case uso && (st.SuperPackets != 52 || st.Segments != 52*8 || st.Completed != 52):
		t.Errorf("counters %+v: want 52 super-packets of 8 segments and 52 checksums completed", st)
	case !uso && st.Completed != 52*9:
		t.Errorf("counters %+v without USO: want 52 x 9 checksums completed", st)
	}
}
