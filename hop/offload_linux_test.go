package hop_test

import (
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pi2hop/pi2hop/analyze"
	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/hop"
	"github.com/pi2hop/pi2hop/internal/roottest"
	"github.com/pi2hop/pi2hop/netsys"
	"github.com/pi2hop/pi2hop/pcap"
	"github.com/pi2hop/pi2hop/shaper"
	"github.com/pi2hop/pi2hop/tun"
	"golang.org/x/sys/unix"
)

// The same shaping and marking through both TUN backends: with the offload
// one, the endpoints' TSO/USO super-packets are split in the hop, every
// segment is its own packet for the AQM, and what comes out is coalesced
// only where no packet changes.

// backendPair is newTestPair with the given backend, a tap counting what
// the hop's taps saw, and a capture of every tap point to a pcapng file
// (checkCapture reads it).
func backendPair(t *testing.T, b tun.Backend, cfg hop.Config) (*testPair, *countTap, *backendCapture) {
	t.Helper()
	cfg.TUN = b
	bc := &backendCapture{path: filepath.Join(t.TempDir(), "hop.pcapng")}
	var err error
	// Records of 64 bytes hold IP and TCP headers; 64 Ki of them ride out
	// any stall of the writer at these rates, so analyze sees them all.
	bc.c, err = pcap.NewCapture(bc.path, pcap.Options{Snaplen: 64, BufferRecords: 1 << 16, TimeOffset: hop.UnixOffset()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bc.c.Close() })
	tap := &countTap{}
	p := newTestPairWith(t, cfg, bothTaps{tap, pcap.NewHopTap(bc.c, "")})
	up, _ := p.Hop.Devices()
	desc := up.(tun.Describer).Backend()
	t.Logf("backend: %s", desc)
	if _, off := up.(tun.OffloadCounter); off != (b == tun.BackendOffload) {
		t.Fatalf("asked for %s, got %s", b, desc)
	}
	return p, tap, bc
}

// bothTaps hands every packet to two taps.
type bothTaps [2]hop.Tap

func (b bothTaps) Packet(dir, point int, at int64, pkt []byte, ev *shaper.Event) {
	b[0].Packet(dir, point, at, pkt, ev)
	b[1].Packet(dir, point, at, pkt, ev)
}

// backendCapture is the pcapng capture of a backendPair's taps.
type backendCapture struct {
	path string
	c    *pcap.Capture
}

// checkCapture stops the pair and its capture, then reads the file: every
// packet in it is a segment (at most the MTU), and analyze finds exactly
// the hop's counters, per direction and queue.
func checkCapture(t *testing.T, p *testPair, bc *backendCapture) {
	t.Helper()
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if err := bc.c.Close(); err != nil {
		t.Fatal(err)
	}
	snap := p.Hop.Stats()
	r, err := pcap.Open(bc.path)
	if err != nil {
		t.Fatal(err)
	}
	var n, largest int
	for {
		pk, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("reading the capture: %v", err)
		}
		n, largest = n+1, max(largest, pk.Length)
	}
	r.Close()
	if n == 0 || largest > hop.DefaultMTU {
		t.Errorf("capture: %d packets, the largest %d bytes; want segments of at most the MTU (%d)", n, largest, hop.DefaultMTU)
	}
	res, err := analyze.Analyze([]analyze.Input{{Path: bc.path}}, analyze.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, ifc := range res.Interfaces {
		if ifc.CaptureDropped != 0 {
			t.Fatalf("capture dropped %d records at %s: exact comparison impossible", ifc.CaptureDropped, ifc.Name)
		}
	}
	for _, ds := range []*hop.DirStats{&snap.Up, &snap.Down} {
		if ds.In == 0 {
			continue
		}
		d := res.Direction(ds.Dir.String())
		if d == nil {
			t.Errorf("no %s direction in the capture", ds.Dir)
			continue
		}
		var in, sent, marked, dropped uint64
		for _, c := range d.Classes {
			hc := ds.Queue.C
			if c.Class == "L" {
				hc = ds.Queue.L
			}
			in, sent, marked, dropped = in+c.In, sent+c.Sent, marked+c.Marked, dropped+c.Dropped
			if c.Sent != hc.Sent || c.Marked != hc.Marked || c.Dropped != hc.Dropped {
				t.Errorf("%s %s: analyze sent/marked/dropped %d/%d/%d, the hop's queue %d/%d/%d",
					ds.Dir, c.Class, c.Sent, c.Marked, c.Dropped, hc.Sent, hc.Marked, hc.Dropped)
			}
		}
		t.Logf("%s: analyze in %d sent %d marked %d dropped %d", ds.Dir, in, sent, marked, dropped)
		if in != ds.In || sent != ds.Out || marked != ds.Marked || dropped != ds.Dropped() {
			t.Errorf("%s: analyze in/sent/marked/dropped %d/%d/%d/%d, the hop %d/%d/%d/%d",
				ds.Dir, in, sent, marked, dropped, ds.In, ds.Out, ds.Marked, ds.Dropped())
		}
	}
}

// countTap counts tapped packets per direction and point, the largest,
// and the UDP datagrams to floodPort written out upstream.
type countTap struct {
	n        [2][3]atomic.Uint64
	maxLen   atomic.Int64
	floodOut atomic.Uint64
}

const floodPort = 9001

func (c *countTap) Packet(dir, point int, at int64, pkt []byte, ev *shaper.Event) {
	c.n[dir][point].Add(1)
	if hop.Dir(dir) == hop.Up && hop.TapPoint(point) == hop.TapOut && udpDstPort(pkt) == floodPort {
		c.floodOut.Add(1)
	}
	for {
		m := c.maxLen.Load()
		if int64(len(pkt)) <= m || c.maxLen.CompareAndSwap(m, int64(len(pkt))) {
			return
		}
	}
}

// udpDstPort is pkt's UDP destination port, 0 if it is no UDP packet.
func udpDstPort(p []byte) int {
	switch {
	case len(p) >= 28 && p[0]>>4 == 4 && p[9] == 17 && len(p) >= int(p[0]&15)*4+4:
		l3 := int(p[0]&15) * 4
		return int(p[l3+2])<<8 | int(p[l3+3])
	case len(p) >= 48 && p[0]>>4 == 6 && p[6] == 17:
		return int(p[42])<<8 | int(p[43])
	}
	return 0
}

// checkTap: the capture saw every packet the counters did, and none
// larger than the MTU (segments, never super-packets).
func checkTap(t *testing.T, tap *countTap, s hop.Snapshot) {
	t.Helper()
	for _, d := range []hop.Dir{hop.Up, hop.Down} {
		ds := s.Dir(d)
		in, out, drop := tap.n[d][hop.TapIn].Load(), tap.n[d][hop.TapOut].Load(), tap.n[d][hop.TapDrop].Load()
		if in != ds.In || out != ds.Out || drop != ds.Dropped() {
			t.Errorf("%s: tap saw in %d out %d drop %d; counters in %d out %d dropped %d", d, in, out, drop, ds.In, ds.Out, ds.Dropped())
		}
	}
	if m := tap.maxLen.Load(); m > hop.DefaultMTU {
		t.Errorf("tap saw a %d-byte packet: want segments of at most the MTU (%d)", m, hop.DefaultMTU)
	}
}

// csumCounters reads the receiving kernel's checksum error counters in ns:
// IPv4 headers, TCP (both families), UDP over IPv4 and over IPv6.
func csumCounters(t *testing.T, ns string) map[string]uint64 {
	t.Helper()
	c := map[string]uint64{}
	err := netsys.Do(ns, func() error {
		for _, f := range [][3]string{{"netstat", "IpExt", "InCsumErrors"}, {"snmp", "Tcp", "InCsumErrors"}, {"snmp", "Udp", "InCsumErrors"}} {
			v, err := snmpField(f[0], f[1], f[2])
			if err != nil {
				return err
			}
			c[f[1]] = v
		}
		v, err := snmp6Field("Udp6InCsumErrors")
		c["Udp6"] = v
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// snmp6Field reads one counter of /proc/thread-self/net/snmp6.
func snmp6Field(name string) (uint64, error) {
	b, err := os.ReadFile("/proc/thread-self/net/snmp6")
	if err != nil {
		return 0, err
	}
	var v uint64
	for _, line := range splitLines(string(b)) {
		if n, err := fmt.Sscanf(line, name+" %d", &v); n == 1 && err == nil {
			return v, nil
		}
	}
	return 0, fmt.Errorf("snmp6: no %s", name)
}

func splitLines(s string) []string {
	var out []string
	for len(s) > 0 {
		i := 0
		for i < len(s) && s[i] != '\n' {
			i++
		}
		out = append(out, s[:i])
		if i < len(s) {
			i++
		}
		s = s[i:]
	}
	return out
}

func checkNoCsumErrors(t *testing.T, before, after map[string]uint64) {
	t.Helper()
	for k, v := range before {
		if after[k] != v {
			t.Errorf("receiver's %s InCsumErrors %d -> %d", k, v, after[k])
		}
	}
}

// TCP through the hop, with TSO on: the rate at the receiver within
// [95 %, 100.5 %] of the link at 100 Mbit/s (checkTCPRate), the hop's
// counters balanced, through each backend (offload is the default one
// every other test uses; the plain one, whose per-packet writes cost most
// at this rate); no checksum error at the receiver. The same bounds at 10
// and 20 Mbit/s, through the offload backend, are TestShareWholePath's.
func TestBackendTCPRate(t *testing.T) {
	roottest.Need(t)
	for _, b := range []tun.Backend{tun.BackendOffload, tun.BackendPlain} {
		for _, bps := range []uint64{100_000_000} {
			t.Run(fmt.Sprintf("%s/%dMbit", b, bps/1_000_000), func(t *testing.T) {
				p, tap, bc := backendPair(t, b, hop.TestConfig(bps, 0))
				csum0, ccsum0 := csumCounters(t, p.ServerNS), csumCounters(t, p.ClientNS)
				got, w := tcpRate(t, p, time.Second, 8*time.Second)
				checkTCPRate(t, got, bps, w)
				tcp6(t, p, 1<<20)
				time.Sleep(200 * time.Millisecond) // let the queue drain
				s := p.Hop.Stats()
				logDir(t, &s.Up)
				hop.CheckBalance(t, s.Up)
				hop.CheckBalance(t, s.Down)
				checkTap(t, tap, s)
				checkNoCsumErrors(t, csum0, csumCounters(t, p.ServerNS))
				checkNoCsumErrors(t, ccsum0, csumCounters(t, p.ClientNS)) // the ACKs
				if b == tun.BackendOffload {
					up, down := p.Hop.Devices()
					su, sd := up.(tun.OffloadCounter).OffloadStats(), down.(tun.OffloadCounter).OffloadStats()
					t.Logf("client side %+v", su)
					t.Logf("server side %+v", sd)
					if su.SuperPackets == 0 || su.Segments < 2*su.SuperPackets {
						t.Errorf("client's TSO: %d super-packets, %d segments read; want super-packets split", su.SuperPackets, su.Segments)
					}
					if su.Dropped()+sd.Dropped() != 0 {
						t.Errorf("offload backend dropped %d packets", su.Dropped()+sd.Dropped())
					}
				}
				checkCapture(t, p, bc)
			})
		}
	}
}

// tcp6 sends n bytes client -> server over IPv6 and waits for them.
func tcp6(t *testing.T, p *testPair, n int) {
	t.Helper()
	addr := netip.AddrPortFrom(p.ServerAddr6, 5006).String()
	var ln net.Listener
	if err := p.InServer(func() (err error) { ln, err = net.Listen("tcp", addr); return }); err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	got := make(chan int, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- -1
			return
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(20 * time.Second))
		total, buf := 0, make([]byte, 64<<10)
		for {
			k, err := c.Read(buf)
			total += k
			if err != nil {
				got <- total
				return
			}
		}
	}()
	var c net.Conn
	if err := p.InClient(func() (err error) { c, err = net.DialTimeout("tcp", addr, 5*time.Second); return }); err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(20 * time.Second))
	if _, err := c.Write(make([]byte, n)); err != nil {
		t.Fatalf("IPv6 TCP write: %v", err)
	}
	c.Close()
	select {
	case k := <-got:
		if k != n {
			t.Errorf("IPv6 TCP: %d of %d bytes received", k, n)
		}
	case <-time.After(25 * time.Second):
		t.Fatalf("IPv6 TCP: no end of transfer within 25 s")
	}
}

// ECT(1) flows sent with UDP_SEGMENT (USO super-packets): the receiver's
// per-packet count of CE (IP_RECVTOS / IPV6_RECVTCLASS) equals the hop's
// mark counter exactly, every datagram the hop sent arrives, and the
// receiver's kernel counts no checksum error. Two flows:
//
//   - unresponsive at twice a 10 Mbit/s link, super-packets of 8
//     datagrams: the queue goes into overload and nearly all are marked;
//   - bursts of 16 datagrams at 15 % of a 1 Gbit/s link with a step
//     threshold of 4 packets: within each burst some segments are marked
//     and some not, and several leave in one release pass, so the offload
//     backend coalesces next to CE marks. A mark applied per super-packet,
//     or smeared or lost when coalescing, makes the counts differ.
func TestBackendMarksSegments(t *testing.T) {
	roottest.Need(t)
	step := aqm.DefaultConfig()
	step.StepThresh, step.StepInPackets = 4, true
	for _, b := range []tun.Backend{tun.BackendOffload, tun.BackendPlain} {
		for _, fl := range []struct {
			name     string
			link     uint64
			q        aqm.Config
			offer    uint64
			perSend  int
			wantBoth bool // marked and unmarked datagrams
		}{
			{"2x", 10_000_000, aqm.DefaultConfig(), 20_000_000, 8, false},
			{"bursts", 1_000_000_000, step, 150_000_000, 16, true},
		} {
			for _, v6 := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/%s/v6=%v", b, fl.name, v6), func(t *testing.T) {
					if !fl.wantBoth {
						// Counts at 10 Mbit/s, no rate or delay: these
						// run side by side, the bursts at 150 Mbit/s
						// one at a time before them.
						t.Parallel()
					}
					cfg := hop.TestConfig(fl.link, 0)
					cfg.Up.Queue.DualPI2 = fl.q
					p, tap, bc := backendPair(t, b, cfg)
					csum0 := csumCounters(t, p.ServerNS)
					recv := gsoFlood(t, p, tap, v6, aqm.ECT1, fl.offer, fl.perSend, 2*time.Second)
					s := p.Hop.Stats()
					t.Logf("received %v (Not-ECT, ECT(1), ECT(0), CE); hop in %d out %d marked %d drops %v",
						recv.ecn, s.Up.In, s.Up.Out, s.Up.Marked, s.Up.QueueDrops)
					if s.Up.Marked == 0 || fl.wantBoth && recv.ecn[aqm.ECT1] == 0 {
						t.Errorf("marked %d, unmarked %d: want marks (and, here, unmarked ones too)", s.Up.Marked, recv.ecn[aqm.ECT1])
					}
					if uint64(recv.ecn[aqm.CE]) != s.Up.Marked {
						t.Errorf("receiver counted %d CE, the hop marked %d: want equal", recv.ecn[aqm.CE], s.Up.Marked)
					}
					if recv.ecn[aqm.NotECT]+recv.ecn[aqm.ECT0] != 0 {
						t.Errorf("datagrams arrived with another codepoint: %v", recv.ecn)
					}
					if recv.total != recv.expected || recv.total == 0 {
						t.Errorf("receiver got %d datagrams, the hop sent %d of the flow", recv.total, recv.expected)
						var miss []uint32 // meaningful when the hop dropped none of the flow
						for i := uint32(0); i < uint32(recv.expected); i++ {
							if !recv.seen[i] {
								miss = append(miss, i)
							}
						}
						t.Logf("datagrams missing (by sequence number): %v", miss[:min(len(miss), 50)])
					}
					hop.CheckBalance(t, s.Up)
					checkTap(t, tap, s)
					checkNoCsumErrors(t, csum0, csumCounters(t, p.ServerNS))
					defer checkCapture(t, p, bc)
					if b != tun.BackendOffload {
						return
					}
					up, down := p.Hop.Devices()
					su, sd := up.(tun.OffloadCounter).OffloadStats(), down.(tun.OffloadCounter).OffloadStats()
					t.Logf("client side %+v", su)
					t.Logf("server side %+v", sd)
					uso := up.(interface{ Offloads() tun.Offloads }).Offloads()&(tun.OffloadUSO4|tun.OffloadUSO6) != 0
					if uso && su.SuperPackets == 0 {
						t.Errorf("USO accepted but no super-packet read")
					}
					if uso && fl.wantBoth && sd.Coalesced == 0 {
						t.Errorf("no coalesced write: the case did not test coalescing next to marks")
					}
				})
			}
		}
	}
}

type floodResult struct {
	ecn             [4]int
	total, expected int
	seen            map[uint32]bool
}

// gsoFlood offers UDP with codepoint ecn at bps for d, in UDP_SEGMENT
// sends of perSend datagrams of 1200 bytes, each numbered in its first 4
// bytes, and counts at the server what
// arrived by ECN field. It waits until the hop has sent everything and the
// receiver has read as many datagrams of the flow as the hop wrote.
func gsoFlood(t *testing.T, p *testPair, tap *countTap, v6 bool, ecn aqm.ECN, bps uint64, perSend int, d time.Duration) floodResult {
	t.Helper()
	const seg = 1200
	server, hdr := p.ServerAddr, 28
	if v6 {
		server, hdr = p.ServerAddr6, 48
	}
	addr := netip.AddrPortFrom(server, floodPort)
	res := floodResult{seen: map[uint32]bool{}}
	var mu sync.Mutex
	rc, done := ecnSink(t, p, addr, unix.SO_RCVBUFFORCE, 16<<20, func(b []byte, e aqm.ECN, ok bool) {
		mu.Lock()
		if len(b) >= 4 {
			res.seen[binary.BigEndian.Uint32(b)] = true
		}
		res.total++
		if ok {
			res.ecn[e]++
		}
		mu.Unlock()
	})
	defer rc.Close()
	sc := ecnSource(t, p, addr, ecn)
	roottest.Control(t, sc, func(fd int) error { return unix.SetsockoptInt(fd, unix.SOL_UDP, unix.UDP_SEGMENT, seg) })
	out0 := tap.floodOut.Load()
	payload := make([]byte, seg*perSend)
	gap := time.Duration(float64(8*perSend*(seg+hdr)) / float64(bps) * 1e9)
	start := time.Now()
	for i := 0; time.Since(start) < d; i++ {
		for k := 0; k < perSend; k++ {
			binary.BigEndian.PutUint32(payload[k*seg:], uint32(i*perSend+k))
		}
		sc.Write(payload)
		if ahead := time.Duration(i+1)*gap - time.Since(start); ahead > 0 {
			time.Sleep(ahead)
		}
	}
	sc.Close()
	// Wait for the hop to empty its queue, then for the receiver to have
	// read every datagram of the flow the hop wrote.
	deadline := time.Now().Add(10 * time.Second)
	var s hop.DirStats
	for {
		s = p.Hop.Stats().Up
		if s.Pending == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("hop still holds %d packets after 10 s", s.Pending)
		}
		time.Sleep(20 * time.Millisecond)
	}
	res.expected = int(tap.floodOut.Load() - out0)
	for {
		mu.Lock()
		n := res.total
		mu.Unlock()
		if n >= res.expected {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("receiver read %d datagrams in 10 s, the hop wrote %d", n, res.expected)
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	rc.Close()
	<-done
	mu.Lock()
	defer mu.Unlock()
	return res
}
