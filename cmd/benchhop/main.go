//go:build linux

// Command benchhop measures the live hop against the kernel's own router
// on this machine, in one run (`make bench-hop`), through
// each TUN backend (offload and plain): forwarding throughput unshaped
// (TCP in rounds interleaved with the kernel router's, -rounds; UDP with
// 1500-byte packets), shaped TCP through DualPI2 with 10 ms delay at 1, 2,
// 5 and 10 Gbit/s, added idle RTT, pacing lateness at 10, 100 and 1000
// Mbit/s, and the hop's CPU time per segment and segments per write; the
// baseline forwarder (baseline.go: a forwarder that only moves packets, writing
// coalesced or one segment per write, behind a 10 ms delay line, and
// paced at 1 Gbit/s as the hop paces); it says which offloads the kernel
// accepted, and the load average it ran under.
//
// It needs root (namespaces, TUN devices) and a quiet machine; it is not
// a test and is not run in CI. Run: go run ./cmd/benchhop
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"net/netip"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/figure"
	"github.com/pi2hop/pi2hop/hop"
	"github.com/pi2hop/pi2hop/internal/hoststeal"
	"github.com/pi2hop/pi2hop/internal/labnet"
	"github.com/pi2hop/pi2hop/internal/ping"
	"github.com/pi2hop/pi2hop/netsys"
	"github.com/pi2hop/pi2hop/shaper"
	"github.com/pi2hop/pi2hop/topology"
	"github.com/pi2hop/pi2hop/tun"
	"golang.org/x/sys/unix"
)

var (
	tcpTime  = flag.Duration("tcp", 5*time.Second, "length of each TCP measurement (after 1s warm-up)")
	udpTime  = flag.Duration("udp", 3*time.Second, "length of each UDP measurement")
	spin     = flag.Duration("spin", 0, "hop.Config.Spin (0: learnt from the timer, negative: off)")
	prio     = flag.Int("priority", 0, "hop.Config.Priority (0: default, negative: normal threads)")
	cpuLat   = flag.Duration("cpu-latency", 0, "hop.Config.CPULatency (0: idle CPUs poll, negative: no PM QoS request)")
	cpuProf  = flag.String("cpuprofile", "", "write a CPU profile of the run to `file`")
	only     = flag.String("only", "", "run only this part: tcp, udp, rtt, baseline, shaped, flows, pacing")
	shapedR  = flag.String("shaped-gbit", "1,2,5,10", "link rates of the shaped TCP measurements, Gbit/s, comma-separated")
	backends = flag.String("tun", "offload,plain", "TUN backends to measure, comma-separated (offload, plain)")
	diagFlag = flag.Bool("diag", false, "print diagnostics of each TCP run: link, queue, CPUs, the sender's TCP_INFO")
	rounds   = flag.Int("rounds", 3, "unshaped TCP: interleaved rounds of the kernel router and each backend, the ratio the median of the rounds'")
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

// parseList reads the -tun and -shaped-gbit lists.
func parseList() ([]tun.Backend, []float64, error) {
	var bs []tun.Backend
	for _, s := range strings.Split(*backends, ",") {
		b, err := tun.ParseBackend(strings.TrimSpace(s))
		if err != nil {
			return nil, nil, fmt.Errorf("-tun: %w", err)
		}
		bs = append(bs, b)
	}
	var rates []float64
	for _, s := range strings.Split(*shapedR, ",") {
		g, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil || g <= 0 || g > 100 {
			return nil, nil, fmt.Errorf("-shaped-gbit %q: want rates in Gbit/s like 1,2,5,10", s)
		}
		rates = append(rates, g)
	}
	return bs, rates, nil
}

// bench is one run's state shared by its figures: the namespace prefix,
// the backends measured (the first one's ratio is printed), the CPU rows
// the figures collect for the table at the end, and what each backend said
// of its devices.
type bench struct {
	prefix   string
	backends []tun.Backend
	cpu      []cpuRow
	seen     map[tun.Backend]string
}

// run prints the figures in order; each figure is one function.
func run() error {
	bs, rates, err := parseList()
	if err != nil {
		return err
	}
	b := &bench{prefix: fmt.Sprintf("p2b%d", os.Getpid()%10000), backends: bs, seen: map[tun.Backend]string{}}
	b.header()
	defer b.backendNotes()
	if want("tcp") || want("udp") || want("rtt") {
		kernel, undo, err := kernelRouter(b.prefix + "k")
		if err != nil {
			return err
		}
		defer undo()
		if want("rtt") { // idle RTT first, on a quiet machine
			if err := b.idleRTT(kernel); err != nil {
				return err
			}
		}
		// UDP is measured before TCP (its CPU rows come first) but
		// printed after it.
		var udp []string
		if want("udp") {
			if udp, err = b.unshapedUDP(kernel); err != nil {
				return err
			}
		}
		if want("tcp") {
			if err := b.unshapedTCP(kernel); err != nil {
				return err
			}
		}
		if want("udp") {
			row(udp...)
		}
	}
	if want("baseline") {
		if err := b.baseline(); err != nil {
			return err
		}
	}
	if want("shaped") {
		for _, g := range rates {
			if err := b.shapedTCP(g); err != nil {
				return err
			}
		}
	}
	if want("flows") {
		if err := b.manyFlows(); err != nil {
			return err
		}
	}
	if want("pacing") {
		if err := b.pacingLateness(); err != nil {
			return err
		}
	}
	b.cpuTables()
	return nil
}

// header prints the run's conditions and the columns of the figures.
func (b *bench) header() {
	fmt.Printf("benchhop: %s, GOMAXPROCS %d, TCP %v, UDP %v, load average %s\n", time.Now().Format(time.RFC3339), runtime.GOMAXPROCS(0), *tcpTime, *udpTime, loadAvg())
	cols := []string{"figure", "kernel"}
	for _, be := range b.backends {
		cols = append(cols, string(be))
	}
	row(append(cols, "ratio "+string(b.backends[0]))...)
}

// backendNotes prints, after the figures, which backend served each
// measured pair and the offloads the kernel accepted.
func (b *bench) backendNotes() {
	fmt.Println()
	for _, be := range b.backends {
		if d, ok := b.seen[be]; ok {
			fmt.Printf("backend %s: %s\n", be, d)
		}
	}
}

// unshapedPair is a fresh pair whose hop, with backend be, runs at
// 100 Gbit/s without delay, so the link never holds a packet back.
func (b *bench) unshapedPair(be tun.Backend) (*topology.Pair, error) {
	p, err := newPair(b.prefix+"u", be, 100_000_000_000, 0)
	if err != nil {
		return nil, err
	}
	b.seen[be] = describe(p.Hop)
	return p, nil
}

// idleRTT prints the kernel router's median idle RTT and what each
// backend's hop adds to it.
func (b *bench) idleRTT(kernel path) error {
	krtt, err := medianPing(kernel, 100)
	if err != nil {
		return err
	}
	rtt := []string{"idle RTT (median of 100), ms", ms(krtt)}
	for _, be := range b.backends {
		unshaped, err := b.unshapedPair(be)
		if err != nil {
			return err
		}
		hrtt, err := medianPing(pairPath(unshaped), 100)
		unshaped.Close()
		if err != nil {
			return err
		}
		rtt = append(rtt, fmt.Sprintf("+%.3f", (hrtt-krtt).Seconds()*1e3))
	}
	row(append(rtt, "added")...)
	return nil
}

// unshapedUDP measures the UDP rate through the kernel router and through
// each backend's unshaped hop, and returns the row to print.
func (b *bench) unshapedUDP(kernel path) ([]string, error) {
	ku, err := udpRate(kernel)
	if err != nil {
		return nil, err
	}
	udp := []string{"UDP 1500 B unshaped, Mbit/s", mbit(ku)}
	var first float64
	for i, be := range b.backends {
		unshaped, err := b.unshapedPair(be)
		if err != nil {
			return nil, err
		}
		up := pairPath(unshaped)
		c0 := cpuAndPackets(up.hop)
		hu, err := udpRate(up)
		if err != nil {
			unshaped.Close()
			return nil, err
		}
		b.cpu = append(b.cpu, cpuRow{"UDP unshaped", be, cpuAndPackets(up.hop).sub(c0)})
		unshaped.Close()
		udp = append(udp, mbit(hu))
		if i == 0 {
			first = hu
		}
	}
	return append(udp, ratio(first, ku)), nil
}

// unshapedTCP measures bulk TCP through the kernel router and through an
// unshaped hop with each backend, *rounds times, interleaved (kernel, each
// backend, kernel, ...), a fresh pair each time, and prints each one's
// median rate and the median of the rounds' ratios for the first backend,
// with every round's ratio beside it. Both sides of a ratio share a
// round: on a VM the kernel router's own rate moves a lot between runs
// minutes apart, so a lone pair of runs says as much about the minute as
// about the hop. The owners' CPU, summed over the rounds, is one CPU row
// per backend.
func (b *bench) unshapedTCP(kernel path) error {
	n := max(*rounds, 1)
	krate := make([]float64, 0, n)
	hrate := make([][]float64, len(b.backends))
	ratios := make([]float64, 0, n)
	cpu := make([]cpuRow, len(b.backends))
	for r := 0; r < n; r++ {
		kt, err := tcpRate(kernel)
		if err != nil {
			return err
		}
		krate = append(krate, kt.ip)
		for i, be := range b.backends {
			unshaped, err := b.unshapedPair(be)
			if err != nil {
				return err
			}
			up := pairPath(unshaped)
			c0 := cpuAndPackets(up.hop)
			ht, err := tcpRate(up)
			if err != nil {
				unshaped.Close()
				return err
			}
			cpu[i] = cpuRow{"TCP unshaped", be, cpu[i].c.add(cpuAndPackets(up.hop).sub(c0))}
			unshaped.Close()
			hrate[i] = append(hrate[i], ht.ip)
			if i == 0 {
				ratios = append(ratios, ht.ip/kt.ip)
			}
		}
	}
	b.cpu = append(b.cpu, cpu...)
	median := func(xs []float64) float64 {
		s := slices.Clone(xs)
		slices.Sort(s)
		return figure.Quantile(s, 0.5)
	}
	name := "TCP unshaped, Mbit/s"
	if n > 1 {
		name = fmt.Sprintf("TCP unshaped, Mbit/s, median of %d", n)
	}
	cols := []string{name, mbit(median(krate))}
	for i := range b.backends {
		cols = append(cols, mbit(median(hrate[i])))
	}
	row(append(cols, fmt.Sprintf("%.3f", median(ratios)))...)
	if n > 1 {
		each := make([]string, len(ratios))
		for i, r := range ratios {
			each[i] = fmt.Sprintf("%.3f", r)
		}
		fmt.Printf("  each round's ratio, %s against the kernel router: %s\n", b.backends[0], strings.Join(each, " "))
	}
	return nil
}

// baseline prints the baseline forwarder's row: the minimal forwarder's TCP rate and
// CPU, writing coalesced or one segment per write, behind a delay line,
// and paced; then each of its threads per packet. Each row a fresh pair:
// no socket or route carries over.
func (b *bench) baseline() error {
	fmt.Println()
	var baselines []cpuRow
	row("baseline forwarder (only moves packets), TCP", "Mbit/s", "µs/segment", "kernel µs", "segments/write")
	for _, v := range []struct {
		name   string
		single bool
		delay  time.Duration
		bps    uint64
	}{
		{"  writes coalesced", false, 0, 0},
		{"  one segment per write", true, 0, 0},
		{"  coalesced, 10 ms delay line", false, 10 * time.Millisecond, 0},
		{"  paced at 1 Gbit/s, 10 ms, held <= 100 us", false, 10 * time.Millisecond, 1_000_000_000},
	} {
		rate, c, per, err := baselineRow(b.prefix+"f", v.single, v.delay, v.bps)
		if err != nil {
			return err
		}
		row(v.name, mbit(rate), fmt.Sprintf("%.2f", c.perSegment()), fmt.Sprintf("%.2f", c.sysPerSegment()), fmt.Sprintf("%.1f", per))
		baselines = append(baselines, cpuRow{name: v.name, c: c})
	}
	row("  each thread, per packet it read", "data µs/pkt", "ACK µs/pkt", "ACK kernel µs", "ACK packets")
	for _, f := range baselines {
		row("  "+f.name, fmt.Sprintf("%.2f", f.c.up.perPacket()), fmt.Sprintf("%.2f", f.c.down.perPacket()), fmt.Sprintf("%.2f", perUnit(f.c.down.sys, f.c.down.packets)), fmt.Sprint(f.c.down.packets))
	}
	return nil
}

// shapedTCP prints bulk TCP through each backend's hop shaped to g Gbit/s
// with DualPI2 and 10 ms delay, as the IP rate and as the server's rx
// counter reads it, each against the link rate.
func (b *bench) shapedTCP(g float64) error {
	bps := uint64(g * 1e9)
	r := []string{fmt.Sprintf("TCP at %g Gbit/s, DualPI2, 10 ms, Mbit/s", g), "(" + mbit(float64(bps)) + ")"}
	var first tcpResult
	rx := []string{"  same, server's rx counter (headers per write)", ""}
	for i, be := range b.backends {
		shaped, err := newPair(b.prefix+"g", be, bps, 10*time.Millisecond)
		if err != nil {
			return err
		}
		sp := pairPath(shaped)
		b.seen[be] = describe(shaped.Hop)
		if err := bdpBuffers(sp); err != nil {
			shaped.Close()
			return err
		}
		c0 := cpuAndPackets(sp.hop)
		st, err := tcpRate(sp)
		if err != nil {
			shaped.Close()
			return err
		}
		c := cpuAndPackets(sp.hop).sub(c0)
		c.ringDrops = ringDrops(sp.hop)
		b.cpu = append(b.cpu, cpuRow{fmt.Sprintf("TCP %g Gbit/s + 10 ms", g), be, c})
		r = append(r, mbit(st.ip))
		rx = append(rx, mbit(st.rx))
		if i == 0 {
			first = st
		}
		shaped.Close()
	}
	row(append(r, fmt.Sprintf("%.3f of rate", first.ip/float64(bps)))...)
	row(append(rx, fmt.Sprintf("%.3f of rate", first.rx/float64(bps)))...)
	return nil
}

// pacingLateness prints pacing lateness at 10, 100 and 1000 Mbit/s per backend,
// then the sending owner's CPU and the host's steal time over the same
// runs. The owner's CPU shows what its spinning costs; the machine's
// steal time (its vCPUs descheduled by the host, 10 ms ticks) shows a run
// whose p99 is the host's stalls rather than the hop.
func (b *bench) pacingLateness() error {
	fmt.Println()
	var lat, cpu, steal [][]string
	for _, bps := range []uint64{10_000_000, 100_000_000, 1_000_000_000} {
		name := fmt.Sprintf("  at %s", shaper.FormatRate(bps))
		l, c, st := []string{name, ""}, []string{name, ""}, []string{name, ""}
		for _, be := range b.backends {
			p, err := pacing(b.prefix+"p", be, bps)
			if err != nil {
				return err
			}
			l = append(l, us(p.p50)+"/"+us(p.p99))
			c = append(c, fmt.Sprintf("%.1f", 100*p.cpu))
			st = append(st, "?")
			if p.steal >= 0 {
				st[len(st)-1] = fmt.Sprint(p.steal.Milliseconds())
			}
		}
		lat, cpu, steal = append(lat, l), append(cpu, c), append(steal, st)
	}
	for _, t := range []struct {
		title string
		rows  [][]string
	}{
		{"pacing lateness (UDP at 1.2x rate), p50/p99 µs", lat},
		{"pacing: the sending owner's CPU, % of a core", cpu},
		{"pacing: host steal time (both vCPUs), ms", steal},
	} {
		row(t.title)
		for _, r := range t.rows {
			row(r...)
		}
	}
	return nil
}

// cpuTables prints the hop's CPU over the figures that collected it, if
// any. Per data segment: both owners' CPU over the segments of the data
// direction (client to server), so a flow's ACKs cost their share of the
// segments they acknowledge rather than count as segments themselves.
// "kernel" is the part of it in system calls: TUN reads and writes,
// waits, and on this one machine the endpoints' own TCP receive and ACK
// processing, which the kernel runs inside the hop's TUN writes. Then
// each owner on its own.
func (b *bench) cpuTables() {
	if len(b.cpu) == 0 {
		return
	}
	fmt.Println()
	row("hop CPU per data segment (both owner threads)", "backend", "µs/segment", "kernel µs", "segments", "ring drops", "segments/write")
	for _, c := range b.cpu {
		row("  "+c.name, string(c.backend), fmt.Sprintf("%.2f", c.c.perSegment()), fmt.Sprintf("%.2f", c.c.sysPerSegment()), fmt.Sprint(c.c.up.packets), fmt.Sprint(c.c.ringDrops), fmt.Sprintf("%.1f", c.c.perWrite()))
	}
	fmt.Println()
	row("each owner thread, per packet it read", "backend", "data µs/pkt", "ACK µs/pkt", "ACK kernel µs", "ACK packets")
	for _, c := range b.cpu {
		row("  "+c.name, string(c.backend), fmt.Sprintf("%.2f", c.c.up.perPacket()), fmt.Sprintf("%.2f", c.c.down.perPacket()), fmt.Sprintf("%.2f", perUnit(c.c.down.sys, c.c.down.packets)), fmt.Sprint(c.c.down.packets))
	}
}

// describe says which backend serves h's devices and, for the offload one,
// which offloads the kernel accepted.
func describe(h *hop.Hop) string {
	up, _ := h.Devices()
	if d, ok := up.(tun.Describer); ok {
		return d.Backend()
	}
	return "unknown"
}

// ringDrops is what the kernel dropped at the hop's input TUN rings.
func ringDrops(h *hop.Hop) uint64 {
	s := h.Stats()
	return s.Up.RingDrops + s.Down.RingDrops
}

// loadAvg is /proc/loadavg's first three fields: measurements taken while
// other work runs are marked by it.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

type cpuRow struct {
	name    string
	backend tun.Backend
	c       cpuCount
}

func want(part string) bool { return *only == "" || *only == part }

// row prints a figure's name and its columns.
func row(cols ...string) {
	fmt.Printf("%-46s", cols[0])
	for _, c := range cols[1:] {
		fmt.Printf(" %12s", c)
	}
	fmt.Println()
}

func mbit(bps float64) string   { return fmt.Sprintf("%.0f", bps/1e6) }
func ms(d time.Duration) string { return fmt.Sprintf("%.3f", d.Seconds()*1e3) }
func us(ns int64) string        { return fmt.Sprintf("%.0f", float64(ns)/1e3) }
func ratio(a, b float64) string { return fmt.Sprintf("%.3f", a/b) }

func newPair(prefix string, b tun.Backend, bps uint64, delay time.Duration) (*topology.Pair, error) {
	d := hop.DirConfig{
		Link:  shaper.Config{Rate: shaper.Const{BitsPerSecond: bps}, Delay: int64(delay)},
		Queue: aqm.Spec{Kind: aqm.KindDualPI2, DualPI2: aqm.DefaultConfig()},
	}
	return topology.NewPair(context.Background(), prefix, hop.Config{Name: prefix, Up: d, Down: d, Seed: 1, Spin: *spin, Priority: *prio, CPULatency: *cpuLat, TUN: b})
}

// bdpBuffers lets TCP in p's namespaces grow its buffers to 64 MB. The
// kernel's defaults (tcp_rmem max 6 MB, half of it window) hold a flow at
// 1 Gbit/s below the link once DualPI2's 15 ms Classic target is added to
// a 20 ms RTT: the measurement would show the socket buffers, not the
// hop. At 5 Gbit/s BBR keeps twice the path's BDP in flight (24 MB at 20
// ms) and a receive buffer advertises about half of itself, so 32 MB is
// still short; docs/performance.md has the rates per buffer size. Each
// namespace has its own copy of these sysctls.
func bdpBuffers(p path) error {
	for _, ns := range []string{p.client, p.server} {
		err := netsys.Do(ns, func() error {
			for _, kv := range [][2]string{{"tcp_rmem", "4096 131072 67108864"}, {"tcp_wmem", "4096 16384 67108864"}} {
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

func pairPath(p *topology.Pair) path {
	return path{client: p.ClientNS, server: p.ServerNS, serverAddr: p.ServerAddr, rxNS: p.ServerNS, rxDev: p.ServerDev, hop: p.Hop}
}

// kernelRouter builds client ─ veth ─ router (forwarding) ─ veth ─ server.
func kernelRouter(prefix string) (path, func(), error) {
	j := netsys.NewJournal(nil)
	r, err := labnet.NewRouter(j, prefix, true)
	if err != nil {
		j.Undo()
		return path{}, nil, err
	}
	p := path{client: r.Client, server: r.Server, serverAddr: r.ServerAddr, rxNS: r.Server, rxDev: "s0", ethHeader: labnet.EthernetHeader}
	return p, func() { j.Undo() }, nil
}

// rxOver is what the server's interface received over d: IP bytes and
// packets, and the time it took.
func rxOver(p path, d time.Duration) (bytes, packets uint64, dt time.Duration, err error) {
	return labnet.RxOver(p.rxNS, p.rxDev, p.ethHeader, d)
}

// tcpResult is one bulk transfer's rate over the measured window, two ways.
type tcpResult struct {
	// ip is the IP rate of the segments the server's interface received,
	// each with the headers it crossed the link with. The link shapes
	// each segment's IP length (as sch_dualpi2 splits GSO), but the
	// interface counts a packet's headers once, and a TUN write that
	// coalesces k segments (or a veth's GSO packet) is one packet. So the
	// payload is the bytes less a header (pmtu - mss: IP, TCP and its
	// timestamps, 52 bytes) per packet, and each mss of it crossed the
	// link as a pmtu-byte segment (TCP_INFO: 1448 and 1500 here).
	ip float64
	// rx is the interface's IP bytes as counted: with k = 23 at 5 Gbit/s
	// it reads 3.3 % under ip, with k = 3 2.4 %.
	rx float64
}

// tcpRate runs one bulk TCP transfer client -> server and measures it
// over *tcpTime after a 1 s warm-up.
func tcpRate(p path) (tcpResult, error) {
	addr := netip.AddrPortFrom(p.serverAddr, 5003).String()
	var ln net.Listener
	if err := netsys.Do(p.server, func() (err error) { ln, err = net.Listen("tcp", addr); return }); err != nil {
		return tcpResult{}, err
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err == nil {
			// Reads of 256 KiB, as the sender's writes. io.Copy to
			// io.Discard reads 8 KiB at a time (Discard's ReadFrom), and a
			// receiver that pays a system call per 8 KiB falls behind at
			// Gbit/s rates: its window closes (TCP_INFO shows it
			// rwnd-limited) and the figure would measure the receiver.
			buf := make([]byte, 256<<10)
			for {
				if _, err := c.Read(buf); err != nil {
					break
				}
			}
			c.Close()
		}
	}()
	var c net.Conn
	if err := netsys.Do(p.client, func() (err error) { c, err = net.DialTimeout("tcp", addr, 5*time.Second); return }); err != nil {
		return tcpResult{}, err
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
	var d *diagRun
	if *diagFlag && p.hop != nil {
		d = startDiag(p.hop)
	}
	b, n, dt, err := rxOver(p, *tcpTime)
	if d != nil {
		d.finish(c)
	}
	if err != nil {
		return tcpResult{}, err
	}
	mss, pmtu, err := segmentSize(c)
	if err != nil {
		return tcpResult{}, err
	}
	payload := float64(b) - float64(pmtu-mss)*float64(n)
	return tcpResult{ip: payload / float64(mss) * float64(pmtu) * 8 / dt.Seconds(), rx: float64(b) * 8 / dt.Seconds()}, nil
}

// segmentSize is c's MSS and path MTU (TCP_INFO): the payload and the IP
// length of a full-size segment.
func segmentSize(c net.Conn) (mss, pmtu uint32, err error) {
	rc, err := c.(*net.TCPConn).SyscallConn()
	if err != nil {
		return 0, 0, err
	}
	var ti *unix.TCPInfo
	cerr := rc.Control(func(fd uintptr) { ti, err = unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO) })
	if cerr != nil {
		return 0, 0, cerr
	}
	if err != nil {
		return 0, 0, fmt.Errorf("TCP_INFO: %w", err)
	}
	if ti.Snd_mss == 0 || ti.Pmtu < ti.Snd_mss {
		return 0, 0, fmt.Errorf("TCP_INFO: MSS %d, path MTU %d", ti.Snd_mss, ti.Pmtu)
	}
	return ti.Snd_mss, ti.Pmtu, nil
}

// udpRate blasts 1472-byte datagrams (1500-byte packets) from the client
// for *udpTime and returns the IP rate received.
func udpRate(p path) (float64, error) {
	addr := netip.AddrPortFrom(p.serverAddr, 5004)
	rc, err := udpSink(p.server, addr)
	if err != nil {
		return 0, err
	}
	defer rc.Close()
	var sc *net.UDPConn
	if err := netsys.Do(p.client, func() (err error) { sc, err = net.DialUDP("udp4", nil, net.UDPAddrFromAddrPort(addr)); return }); err != nil {
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
	r, err := labnet.RateOver(p.rxNS, p.rxDev, p.ethHeader, *udpTime)
	close(stop)
	sc.Close()
	return r, err
}

// udpSink listens on addr in ns and reads and drops whatever arrives
// until it is closed: a port nobody listens on would answer with ICMP
// port unreachable, traffic back through the hop, and the sender's
// connected socket would fail some of its writes with ECONNREFUSED.
func udpSink(ns string, addr netip.AddrPort) (*net.UDPConn, error) {
	var rc *net.UDPConn
	if err := netsys.Do(ns, func() (err error) { rc, err = net.ListenUDP("udp4", net.UDPAddrFromAddrPort(addr)); return }); err != nil {
		return nil, err
	}
	go func() {
		buf := make([]byte, 2048)
		for {
			if _, err := rc.Read(buf); err != nil {
				return
			}
		}
	}()
	return rc, nil
}

// pacingRun is what pacing measured over its last 1.5 s.
type pacingRun struct {
	p50, p99 int64         // the driver's lateness quantiles, ns
	cpu      float64       // the sending direction's owner CPU, fraction of a core
	steal    time.Duration // the machine's steal time, summed over its CPUs (-1: unknown)
}

// pacing offers UDP at 1.2x bps through a fresh hop at bps for 2 s and
// measures the last 1.5 s.
func pacing(prefix string, b tun.Backend, bps uint64) (pacingRun, error) {
	pr, err := newPair(prefix, b, bps, 0)
	if err != nil {
		return pacingRun{}, err
	}
	defer pr.Close()
	addr := netip.AddrPortFrom(pr.ServerAddr, 5005)
	rc, err := udpSink(pr.ServerNS, addr)
	if err != nil {
		return pacingRun{}, err
	}
	defer rc.Close()
	var sc *net.UDPConn
	if err := pr.InClient(func() (err error) { sc, err = net.DialUDP("udp4", nil, net.UDPAddrFromAddrPort(addr)); return }); err != nil {
		return pacingRun{}, err
	}
	defer sc.Close()
	payload := make([]byte, 1472)
	gap := time.Duration(float64(8*1500) / (1.2 * float64(bps)) * 1e9)
	start := time.Now()
	var before hop.DirStats
	var t0 time.Time
	var steal0 time.Duration
	for i := 0; time.Since(start) < 2*time.Second; i++ {
		if before.Seq == 0 && time.Since(start) > 500*time.Millisecond {
			before, t0, steal0 = pr.Hop.Stats().Up, time.Now(), hoststeal.Total()
		}
		sc.Write(payload)
		if ahead := time.Duration(i+1)*gap - time.Since(start); ahead > 200*time.Microsecond {
			time.Sleep(ahead)
		}
	}
	after := pr.Hop.Stats().Up
	wall := time.Since(t0)
	h := after.Lateness.Sub(&before.Lateness)
	return pacingRun{
		p50: h.Quantile(0.5), p99: h.Quantile(0.99),
		cpu:   float64(after.CPU-before.CPU) / float64(wall),
		steal: stealSince(steal0),
	}, nil
}

// stealSince is the host steal time since hoststeal.Total gave t0, -1
// if either reading failed.
func stealSince(t0 time.Duration) time.Duration {
	t := hoststeal.Total()
	if t < 0 || t0 < 0 {
		return -1
	}
	return t - t0
}

// cpuCount is each hop owner's CPU time and the packets it read (the
// segments, after any split): up carries the measurements' data, down
// their ACKs.
type cpuCount struct {
	up, down  ownerCount
	ringDrops uint64
}

type ownerCount struct {
	cpu, sys int64 // ns
	packets  uint64
	writes   uint64 // the write system calls that carried them out (writesOf)
}

func cpuAndPackets(h *hop.Hop) cpuCount {
	s := h.Stats()
	client, server := h.Devices()
	return cpuCount{
		up:   ownerCount{cpu: s.Up.CPU, sys: s.Up.CPUSys, packets: s.Up.In, writes: writesOf(server, s.Up.Out)},
		down: ownerCount{cpu: s.Down.CPU, sys: s.Down.CPUSys, packets: s.Down.In, writes: writesOf(client, s.Down.Out)},
	}
}

func (c cpuCount) sub(o cpuCount) cpuCount {
	return cpuCount{up: c.up.sub(o.up), down: c.down.sub(o.down)}
}

func (c cpuCount) add(o cpuCount) cpuCount {
	return cpuCount{up: c.up.add(o.up), down: c.down.add(o.down), ringDrops: c.ringDrops + o.ringDrops}
}

func (c ownerCount) add(o ownerCount) ownerCount {
	return ownerCount{cpu: c.cpu + o.cpu, sys: c.sys + o.sys, packets: c.packets + o.packets, writes: c.writes + o.writes}
}

func (c ownerCount) sub(o ownerCount) ownerCount {
	return ownerCount{cpu: c.cpu - o.cpu, sys: c.sys - o.sys, packets: c.packets - o.packets, writes: c.writes - o.writes}
}

// perWrite is the data segments per write system call.
func (c cpuCount) perWrite() float64 {
	if c.up.writes == 0 {
		return 0
	}
	return float64(c.up.packets) / float64(c.up.writes)
}

// perSegment is both owners' CPU per data segment, µs.
func (c cpuCount) perSegment() float64 { return perUnit(c.up.cpu+c.down.cpu, c.up.packets) }

// sysPerSegment is the kernel's part of perSegment, µs.
func (c cpuCount) sysPerSegment() float64 { return perUnit(c.up.sys+c.down.sys, c.up.packets) }

// perPacket is one owner's CPU per packet it read, µs.
func (c ownerCount) perPacket() float64 { return perUnit(c.cpu, c.packets) }

func perUnit(ns int64, n uint64) float64 {
	if n == 0 {
		return 0
	}
	return float64(ns) / float64(n) / 1e3
}

// medianPing pings p's server from its client n times, 10 ms apart, and
// returns the median RTT.
func medianPing(p path, n int) (time.Duration, error) {
	return ping.Median(p.client, p.serverAddr, n, 10*time.Millisecond)
}
