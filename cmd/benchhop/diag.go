//go:build linux

package main

// Diagnostics of one shaped TCP run (-diag): what the link, the queue,
// the sender's TCP and the machine's CPUs did over the measured window.

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/hop"
	"golang.org/x/sys/unix"
)

// diagRun samples the hop while a transfer runs: every 20 ms the data
// direction's queue length (a link that idles shows as an empty queue),
// and at both ends its counters, /proc/stat and every thread's CPU time.
type diagRun struct {
	h          *hop.Hop
	s0         hop.Snapshot
	cpu0       []cpuStat
	th0        map[int]threadStat
	t0         time.Time
	stop, done chan struct{}
	samples    int
	emptyQ     int // samples with nothing in the queue
	qpkts      []int
}

type cpuStat [10]uint64 // /proc/stat jiffies: user nice system idle iowait irq softirq steal guest guest_nice

func readCPUStats() []cpuStat {
	b, _ := os.ReadFile("/proc/stat")
	var out []cpuStat
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) < 11 || !strings.HasPrefix(f[0], "cpu") {
			continue
		}
		var c cpuStat
		for i := range c {
			c[i], _ = strconv.ParseUint(f[i+1], 10, 64)
		}
		out = append(out, c)
	}
	return out
}

type threadStat struct {
	comm string
	cpu  int64 // ns
}

// threads reads every thread of this process and every ksoftirqd.
func threads() map[int]threadStat {
	m := map[int]threadStat{}
	read := func(dir string, id int) {
		b, err := os.ReadFile(dir + "/schedstat")
		if err != nil {
			return
		}
		f, _, _ := strings.Cut(string(b), " ")
		ns, _ := strconv.ParseInt(f, 10, 64)
		c, _ := os.ReadFile(dir + "/comm")
		m[id] = threadStat{strings.TrimSpace(string(c)), ns}
	}
	ts, _ := filepath.Glob("/proc/self/task/*")
	for _, t := range ts {
		id, _ := strconv.Atoi(filepath.Base(t))
		read(t, id)
	}
	ps, _ := filepath.Glob("/proc/[0-9]*/comm")
	for _, p := range ps {
		c, _ := os.ReadFile(p)
		if strings.HasPrefix(string(c), "ksoftirqd") {
			id, _ := strconv.Atoi(filepath.Base(filepath.Dir(p)))
			read(filepath.Dir(p), -id)
		}
	}
	return m
}

func startDiag(h *hop.Hop) *diagRun {
	d := &diagRun{h: h, s0: h.Stats(), cpu0: readCPUStats(), th0: threads(), t0: time.Now(), stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(d.done)
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-d.stop:
				return
			case <-t.C:
			}
			s := h.Stats()
			d.samples++
			if s.Up.Queue.BacklogPkts == 0 {
				d.emptyQ++
			}
			d.qpkts = append(d.qpkts, s.Up.Queue.BacklogPkts)
		}
	}()
	return d
}

func (d *diagRun) finish(c net.Conn) {
	close(d.stop)
	<-d.done
	s1 := d.h.Stats()
	wall := time.Since(d.t0)
	cpu1 := readCPUStats()
	th1 := threads()
	u0, u1 := d.s0.Up, s1.Up
	el := float64(u1.Elapsed - u0.Elapsed)
	fmt.Printf("diag: wall %v; link busy %.3f of the time; sent %d pkts %.0f Mbit/s at the link; delivered %.0f Mbit/s\n",
		wall.Round(time.Millisecond), float64(u1.Link.Busy-u0.Link.Busy)/el, u1.Link.Sent-u0.Link.Sent,
		float64(u1.Link.SentBytes-u0.Link.SentBytes)*8/el*1e3, float64(u1.Link.DeliveredBytes-u0.Link.DeliveredBytes)*8/el*1e3)
	var drops []string
	for r, n := range u1.QueueDrops {
		if k := n - u0.QueueDrops[r]; k > 0 {
			drops = append(drops, fmt.Sprintf("%s=%d", aqm.Reason(r), k))
		}
	}
	fmt.Printf("diag: up in %d, marked %d, drops %v, nobuf %d, ring drops %d, prob %.5f, maxQ %d\n",
		u1.In-u0.In, u1.Marked-u0.Marked, drops, u1.NoBuffer-u0.NoBuffer, u1.RingDrops-u0.RingDrops, float64(u1.Queue.Prob)/float64(1<<32), u1.Queue.MaxQ)
	sc := u1.SojournC.Sub(&u0.SojournC)
	la := u1.Lateness.Sub(&u0.Lateness)
	w, _ := u1.Worst.Since(&u0.Worst)
	fmt.Printf("diag: sojournC p50 %.2f ms p99 %.2f ms; lateness p50 %.0f µs p99 %.0f µs worst %.2f ms\n",
		float64(sc.Quantile(0.5))/1e6, float64(sc.Quantile(0.99))/1e6, float64(la.Quantile(0.5))/1e3, float64(la.Quantile(0.99))/1e3, float64(w)/1e6)
	q := append([]int(nil), d.qpkts...)
	sort.Ints(q)
	if len(q) > 0 {
		fmt.Printf("diag: queue samples %d, empty %.2f, p10 %d p50 %d p90 %d pkts\n", d.samples, float64(d.emptyQ)/float64(d.samples), q[len(q)/10], q[len(q)/2], q[len(q)*9/10])
	}
	d0, d1 := d.s0.Down, s1.Down
	fmt.Printf("diag: owners CPU: up %.3f down %.3f of a core (sys %.3f %.3f)\n",
		float64(u1.CPU-u0.CPU)/el, float64(d1.CPU-d0.CPU)/el, float64(u1.CPUSys-u0.CPUSys)/el, float64(d1.CPUSys-d0.CPUSys)/el)
	names := []string{"user", "nice", "sys", "idle", "iowait", "irq", "softirq", "steal"}
	for i := range cpu1 {
		if i >= len(d.cpu0) {
			break
		}
		var tot uint64
		for k := 0; k < 8; k++ {
			tot += cpu1[i][k] - d.cpu0[i][k]
		}
		var parts []string
		for k := 0; k < 8; k++ {
			parts = append(parts, fmt.Sprintf("%s %.2f", names[k], float64(cpu1[i][k]-d.cpu0[i][k])/float64(tot)))
		}
		label := "all"
		if i > 0 {
			label = fmt.Sprintf("cpu%d", i-1)
		}
		fmt.Printf("diag: %s: %s\n", label, strings.Join(parts, " "))
	}
	type tc struct {
		id   int
		name string
		ns   int64
	}
	var ts []tc
	for id, t := range th1 {
		if t0, ok := d.th0[id]; ok && t.cpu-t0.cpu > int64(wall)/200 {
			ts = append(ts, tc{id, t.comm, t.cpu - t0.cpu})
		}
	}
	sort.Slice(ts, func(i, j int) bool { return ts[i].ns > ts[j].ns })
	var tot int64
	var parts []string
	for _, t := range ts {
		if t.id > 0 {
			tot += t.ns
		}
		parts = append(parts, fmt.Sprintf("%d(%s) %.3f", t.id, t.name, float64(t.ns)/float64(wall)))
	}
	fmt.Printf("diag: process %.3f cores; threads: %s\n", float64(tot)/float64(wall), strings.Join(parts, ", "))
	if tcp, ok := c.(*net.TCPConn); ok {
		rc, err := tcp.SyscallConn()
		if err == nil {
			rc.Control(func(fd uintptr) {
				ti, err := unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO)
				if err != nil {
					return
				}
				fmt.Printf("diag: sender tcp: cwnd %d ssthresh %d rtt %.2f ms rttvar %.2f minrtt %.2f unacked %d retrans_total %d lost %d pacing %.0f Mbit/s delivery %.0f Mbit/s busy %d ms rwnd_lim %d ms sndbuf_lim %d ms ca_state %d\n",
					ti.Snd_cwnd, ti.Snd_ssthresh, float64(ti.Rtt)/1e3, float64(ti.Rttvar)/1e3, float64(ti.Min_rtt)/1e3, ti.Unacked, ti.Total_retrans, ti.Lost,
					float64(ti.Pacing_rate)*8/1e6, float64(ti.Delivery_rate)*8/1e6, ti.Busy_time/1000, ti.Rwnd_limited/1000, ti.Sndbuf_limited/1000, ti.Ca_state)
			})
		}
	}
}
