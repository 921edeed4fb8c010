// Command benchhop measures the live hop against the kernel's own router
// on this machine, in one run (issue 3, `make bench-hop`): forwarding
// throughput unshaped (TCP and UDP with 1500-byte packets), shaped TCP at
// 1 Gbit/s through DualPI2 with 10 ms delay, added idle RTT, pacing
// lateness at 10, 100 and 1000 Mbit/s, and the hop's CPU time per packet.
//
// It needs root (namespaces, TUN devices) and a quiet machine; it is not
// a test and is not run in CI. Run: go run ./hop/benchhop
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"runtime"
	"runtime/pprof"
	"time"

	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/hop"
	"github.com/pi2hop/pi2hop/shaper"
	"github.com/pi2hop/pi2hop/tun"
	"github.com/vishvananda/netlink"
)

var (
	tcpTime = flag.Duration("tcp", 5*time.Second, "length of each TCP measurement (after 1s warm-up)")
	udpTime = flag.Duration("udp", 3*time.Second, "length of each UDP measurement")
	spin    = flag.Duration("spin", 0, "hop.Config.Spin (0: learnt from the timer, negative: off)")
	prio    = flag.Int("priority", 0, "hop.Config.Priority (0: default, negative: normal threads)")
	cpuLat  = flag.Duration("cpu-latency", 0, "hop.Config.CPULatency (0: idle CPUs poll, negative: no PM QoS request)")
	cpuProf = flag.String("cpuprofile", "", "write a CPU profile of the run to `file`")
	only    = flag.String("only", "", "run only this part: tcp, udp, rtt, shaped, pacing")
	shapedR = flag.Float64("shaped-gbit", 1, "link rate of the shaped TCP measurement, Gbit/s")
)

func main() {
	flag.Parse()
	if os.Geteuid() != 0 {
		fmt.Fprintln(os.Stderr, "benchhop: needs root (network namespaces, TUN devices)")
		os.Exit(2)
	}
	if *cpuProf != "" {
		f, err := os.Create(*cpuProf)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "benchhop:", err)
			os.Exit(1)
		}
		defer pprof.StopCPUProfile()
	}
	if err := run(); err != nil {
		pprof.StopCPUProfile()
		fmt.Fprintln(os.Stderr, "benchhop:", err)
		os.Exit(1)
	}
}

// path is one way from a client namespace to a server namespace.
type path struct {
	client, server string
	serverAddr     netip.Addr
	rxNS, rxDev    string // where the server receives, for IP byte counts
	ethHeader      uint64 // link-layer bytes per packet in rxDev's counters
	hop            *hop.Hop
}

func run() error {
	prefix := fmt.Sprintf("p2b%d", os.Getpid()%10000)
	fmt.Printf("benchhop: %s, GOMAXPROCS %d, TCP %v, UDP %v\n", time.Now().Format(time.RFC3339), runtime.GOMAXPROCS(0), *tcpTime, *udpTime)
	row("figure", "kernel", "pi2hop", "ratio")
	var cpu []cpuRow
	if want("tcp") || want("udp") || want("rtt") {
		kernel, undo, err := kernelRouter(prefix + "k")
		if err != nil {
			return err
		}
		defer undo()
		unshaped, err := newPair(prefix+"u", 100_000_000_000, 0)
		if err != nil {
			return err
		}
		defer unshaped.Close()
		up := pairPath(unshaped)
		// Idle RTT first, on a quiet machine.
		if want("rtt") {
			krtt, err := medianPing(kernel, 100)
			if err != nil {
				return err
			}
			hrtt, err := medianPing(up, 100)
			if err != nil {
				return err
			}
			row("idle RTT (median of 100), ms", ms(krtt), ms(hrtt), fmt.Sprintf("+%.3f ms", (hrtt-krtt).Seconds()*1e3))
		}
		if want("tcp") {
			kt, err := tcpRate(kernel)
			if err != nil {
				return err
			}
			c0 := cpuAndPackets(up.hop)
			ht, err := tcpRate(up)
			if err != nil {
				return err
			}
			cpu = append(cpu, cpuRow{"TCP unshaped", cpuAndPackets(up.hop).sub(c0)})
			row("TCP unshaped, Mbit/s", mbit(kt), mbit(ht), ratio(ht, kt))
		}
		if want("udp") {
			ku, err := udpRate(kernel)
			if err != nil {
				return err
			}
			c0 := cpuAndPackets(up.hop)
			hu, err := udpRate(up)
			if err != nil {
				return err
			}
			cpu = append(cpu, cpuRow{"UDP unshaped", cpuAndPackets(up.hop).sub(c0)})
			row("UDP 1500 B unshaped, Mbit/s", mbit(ku), mbit(hu), ratio(hu, ku))
		}
		unshaped.Close()
	}
	if want("shaped") {
		bps := uint64(*shapedR * 1e9)
		shaped, err := newPair(prefix+"g", bps, 10*time.Millisecond)
		if err != nil {
			return err
		}
		defer shaped.Close()
		sp := pairPath(shaped)
		if err := bdpBuffers(sp); err != nil {
			return err
		}
		c0 := cpuAndPackets(sp.hop)
		st, err := tcpRate(sp)
		if err != nil {
			return err
		}
		cpu = append(cpu, cpuRow{fmt.Sprintf("TCP %g Gbit/s + 10 ms", *shapedR), cpuAndPackets(sp.hop).sub(c0)})
		row(fmt.Sprintf("TCP at %g Gbit/s, DualPI2, 10 ms delay, Mbit/s", *shapedR), "("+mbit(float64(bps))+")", mbit(st), fmt.Sprintf("%.3f of rate", st/float64(bps)))
		shaped.Close()
	}
	if want("pacing") {
		fmt.Println()
		row("pacing lateness (UDP at 1.2x rate)", "p50 µs", "p99 µs", "")
		for _, bps := range []uint64{10_000_000, 100_000_000, 1_000_000_000} {
			p50, p99, err := pacing(prefix+"p", bps)
			if err != nil {
				return err
			}
			row(fmt.Sprintf("  at %s", shaper.FormatRate(bps)), us(p50), us(p99), "")
		}
	}
	if len(cpu) > 0 {
		fmt.Println()
		row("hop CPU per packet (owner threads)", "µs/pkt", "packets", "")
		for _, c := range cpu {
			row("  "+c.name, fmt.Sprintf("%.2f", c.c.perPacket()), fmt.Sprint(c.c.packets), "")
		}
	}
	return nil
}

type cpuRow struct {
	name string
	c    cpuCount
}

func want(part string) bool { return *only == "" || *only == part }

func row(a, b, c, d string) { fmt.Printf("%-46s %12s %12s %14s\n", a, b, c, d) }

func mbit(bps float64) string   { return fmt.Sprintf("%.0f", bps/1e6) }
func ms(d time.Duration) string { return fmt.Sprintf("%.3f", d.Seconds()*1e3) }
func us(ns int64) string        { return fmt.Sprintf("%.0f", float64(ns)/1e3) }
func ratio(a, b float64) string { return fmt.Sprintf("%.3f", a/b) }

func newPair(prefix string, bps uint64, delay time.Duration) (*hop.Pair, error) {
	d := hop.DirConfig{
		Link:  shaper.Config{Rate: shaper.Const{BitsPerSecond: bps}, Delay: int64(delay)},
		Queue: aqm.Spec{Kind: aqm.KindDualPI2, DualPI2: aqm.DefaultConfig()},
	}
	return hop.NewPair(context.Background(), prefix, hop.Config{Name: prefix, Up: d, Down: d, Seed: 1, Spin: *spin, Priority: *prio, CPULatency: *cpuLat})
}

// bdpBuffers lets TCP in p's namespaces grow its windows to 32 MB. The
// kernel's defaults (tcp_rmem max 6 MB, half of it window) hold a flow at
// 1 Gbit/s to about 0.7-0.9 Gbit/s once DualPI2's 15 ms Classic target is
// added to a 20 ms RTT: the measurement would show the socket buffers, not
// the hop. Each namespace has its own copy of these sysctls.
func bdpBuffers(p path) error {
	for _, ns := range []string{p.client, p.server} {
		err := tun.Do(ns, func() error {
			for _, kv := range [][2]string{{"tcp_rmem", "4096 131072 33554432"}, {"tcp_wmem", "4096 16384 33554432"}} {
				if err := os.WriteFile("/proc/sys/net/ipv4/"+kv[0], []byte(kv[1]), 0o644); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("socket buffers in %s: %w", ns, err)
		}
	}
	return nil
}

func pairPath(p *hop.Pair) path {
	return path{client: p.ClientNS, server: p.ServerNS, serverAddr: p.ServerAddr, rxNS: p.ServerNS, rxDev: p.ServerDev, hop: p.Hop}
}

// kernelRouter builds client ─ veth ─ router (ip_forward) ─ veth ─ server.
func kernelRouter(prefix string) (path, func(), error) {
	j := tun.NewJournal(nil)
	c, r, s := prefix+"c", prefix+"r", prefix+"s"
	steps := []func() error{
		func() error { return j.NewNamespace(c) },
		func() error { return j.NewNamespace(r) },
		func() error { return j.NewNamespace(s) },
		func() error { return j.AddVeth(c, "c0", r, "rl") },
		func() error { return j.AddVeth(r, "rw", s, "s0") },
		func() error { return j.AddAddr(c, "c0", netip.MustParsePrefix("10.254.10.2/24")) },
		func() error { return j.AddAddr(r, "rl", netip.MustParsePrefix("10.254.10.1/24")) },
		func() error { return j.AddAddr(r, "rw", netip.MustParsePrefix("10.254.20.1/24")) },
		func() error { return j.AddAddr(s, "s0", netip.MustParsePrefix("10.254.20.2/24")) },
		func() error {
			return j.AddRoute(c, tun.Route{Dst: netip.MustParsePrefix("0.0.0.0/0"), Dev: "c0", Gw: netip.MustParseAddr("10.254.10.1")})
		},
		func() error {
			return j.AddRoute(s, tun.Route{Dst: netip.MustParsePrefix("0.0.0.0/0"), Dev: "s0", Gw: netip.MustParseAddr("10.254.20.1")})
		},
		func() error { return j.SetSysctl(r, "net/ipv4/ip_forward", "1") },
	}
	for _, f := range steps {
		if err := f(); err != nil {
			j.Undo()
			return path{}, nil, err
		}
	}
	p := path{client: c, server: s, serverAddr: netip.MustParseAddr("10.254.20.2"), rxNS: s, rxDev: "s0", ethHeader: 14}
	return p, func() { j.Undo() }, nil
}

// rxIPBytes is the IP bytes received on the server's interface.
func rxIPBytes(p path) (uint64, error) {
	var n uint64
	err := tun.Do(p.rxNS, func() error {
		l, err := netlink.LinkByName(p.rxDev)
		if err != nil {
			return err
		}
		s := l.Attrs().Statistics
		n = s.RxBytes - p.ethHeader*s.RxPackets
		return nil
	})
	return n, err
}

func rateOver(p path, d time.Duration) (float64, error) {
	b0, err := rxIPBytes(p)
	t0 := time.Now()
	if err != nil {
		return 0, err
	}
	time.Sleep(d)
	b1, err := rxIPBytes(p)
	return float64(b1-b0) * 8 / time.Since(t0).Seconds(), err
}

// tcpRate runs one bulk TCP transfer client -> server and returns the IP
// rate received over *tcpTime after a 1 s warm-up.
func tcpRate(p path) (float64, error) {
	addr := netip.AddrPortFrom(p.serverAddr, 5003).String()
	var ln net.Listener
	if err := tun.Do(p.server, func() (err error) { ln, err = net.Listen("tcp", addr); return }); err != nil {
		return 0, err
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err == nil {
			io.Copy(io.Discard, c)
			c.Close()
		}
	}()
	var c net.Conn
	if err := tun.Do(p.client, func() (err error) { c, err = net.DialTimeout("tcp", addr, 5*time.Second); return }); err != nil {
		return 0, err
	}
	defer c.Close()
	go func() {
		buf := make([]byte, 256<<10)
		for {
			if _, err := c.Write(buf); err != nil {
				return
			}
		}
	}()
	time.Sleep(time.Second)
	return rateOver(p, *tcpTime)
}

// udpRate blasts 1472-byte datagrams (1500-byte packets) from the client
// for *udpTime and returns the IP rate received.
func udpRate(p path) (float64, error) {
	addr := netip.AddrPortFrom(p.serverAddr, 5004)
	var rc *net.UDPConn
	if err := tun.Do(p.server, func() (err error) { rc, err = net.ListenUDP("udp4", net.UDPAddrFromAddrPort(addr)); return }); err != nil {
		return 0, err
	}
	defer rc.Close()
	go func() {
		buf := make([]byte, 2048)
		for {
			if _, err := rc.Read(buf); err != nil {
				return
			}
		}
	}()
	var sc *net.UDPConn
	if err := tun.Do(p.client, func() (err error) { sc, err = net.DialUDP("udp4", nil, net.UDPAddrFromAddrPort(addr)); return }); err != nil {
		return 0, err
	}
	stop := make(chan struct{})
	go func() {
		payload := make([]byte, 1472)
		for {
			select {
			case <-stop:
				return
			default:
			}
			sc.Write(payload)
		}
	}()
	time.Sleep(300 * time.Millisecond)
	r, err := rateOver(p, *udpTime)
	close(stop)
	sc.Close()
	return r, err
}

// pacing offers UDP at 1.2x bps through a fresh hop at bps for 2 s and
// returns the driver's lateness quantiles over the last 1.5 s.
func pacing(prefix string, bps uint64) (p50, p99 int64, err error) {
	pr, err := newPair(prefix, bps, 0)
	if err != nil {
		return 0, 0, err
	}
	defer pr.Close()
	addr := netip.AddrPortFrom(pr.ServerAddr, 5005)
	var sc *net.UDPConn
	if err := pr.InClient(func() (err error) { sc, err = net.DialUDP("udp4", nil, net.UDPAddrFromAddrPort(addr)); return }); err != nil {
		return 0, 0, err
	}
	defer sc.Close()
	payload := make([]byte, 1472)
	gap := time.Duration(float64(8*1500) / (1.2 * float64(bps)) * 1e9)
	start := time.Now()
	var before hop.DirStats
	for i := 0; time.Since(start) < 2*time.Second; i++ {
		if before.Seq == 0 && time.Since(start) > 500*time.Millisecond {
			before = pr.Hop.Stats().Up
		}
		sc.Write(payload)
		if ahead := time.Duration(i+1)*gap - time.Since(start); ahead > 200*time.Microsecond {
			time.Sleep(ahead)
		}
	}
	after := pr.Hop.Stats().Up
	h := after.Lateness.Sub(&before.Lateness)
	return h.Quantile(0.5), h.Quantile(0.99), nil
}

// cpuCount is the hop owners' CPU time and the packets they handled.
type cpuCount struct {
	cpu     int64
	packets uint64
}

func cpuAndPackets(h *hop.Hop) cpuCount {
	s := h.Stats()
	return cpuCount{cpu: s.Up.CPU + s.Down.CPU, packets: s.Up.In + s.Down.In}
}

func (c cpuCount) sub(o cpuCount) cpuCount { return cpuCount{c.cpu - o.cpu, c.packets - o.packets} }

func (c cpuCount) perPacket() float64 {
	if c.packets == 0 {
		return 0
	}
	return float64(c.cpu) / float64(c.packets) / 1e3
}

// medianPing pings p's server from its client n times, 10 ms apart, and
// returns the median RTT.
func medianPing(p path, n int) (time.Duration, error) {
	return hop.MedianPing(p.client, p.serverAddr, n, 10*time.Millisecond)
}
