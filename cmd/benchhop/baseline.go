//go:build linux

package main

import (
	"fmt"
	"net/netip"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pi2hop/pi2hop/netsys"
	"github.com/pi2hop/pi2hop/shaper"
	"github.com/pi2hop/pi2hop/topology"
	"github.com/pi2hop/pi2hop/tun"
	"golang.org/x/sys/unix"
)

// The baseline forwarder: what a forwarder that does nothing but move packets
// between the two offload TUNs pays per 1500-byte segment, when the kernel
// gets them coalesced (as the hop writes when many are due at once) and
// when it gets one per write (as the hop must write when a paced link lets
// one segment go at a time, 12 µs apart at 1 Gbit/s). No AQM, shaper,
// timers, statistics or slab: the difference between the two rows is the
// cost of a write itself (the system call, and the receiving stack's IP
// and TCP work for that write, which the kernel runs inside it), and the
// one-per-write row is a floor under the hop's CPU per segment on a link
// paced finely enough that each departure is its own write. A third row
// holds every packet 10 ms before writing it, as the hop's delay line
// does, without a rate: the floor for a forwarder whose packets go out
// cold from the cache. A fourth paces the data at the link's rate behind
// the same delay line and writes the due packets as the hop does on a
// fast link (held up to 100 µs after the first is due, while another
// falls due before then): the floor under the hop's CPU per segment on a
// paced link at 1 Gbit/s. Its timed waits keep the
// kernel's default 50 µs timer slack, so it wakes later than an exact
// hop and writes larger batches: it errs towards a lower floor.

// minimalForwarder moves packets from in to out on its own OS thread until
// stopped, reading batches as the hop does (segments with partial
// checksums) and writing them coalesced or one per call.
type minimalForwarder struct {
	in     tun.PartialReader
	out    tun.PartialWriter
	single bool
	delay  int64  // ns each packet is held before its write (a delay line)
	rate   uint64 // bit/s the packets are paced at behind the delay line; 0: no rate
	stop   atomic.Bool
	done   sync.WaitGroup

	// Set when the loop returns.
	cpu, sys int64 // thread CPU time, ns (getrusage RUSAGE_THREAD)
	packets  uint64
	err      error
}

func (f *minimalForwarder) start() {
	f.done.Add(1)
	go func() {
		defer f.done.Done()
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		var r0, r1 unix.Rusage
		unix.Getrusage(unix.RUSAGE_THREAD, &r0)
		f.err = f.loop()
		unix.Getrusage(unix.RUSAGE_THREAD, &r1)
		f.sys = r1.Stime.Nano() - r0.Stime.Nano()
		f.cpu = r1.Utime.Nano() - r0.Utime.Nano() + f.sys
	}()
}

func (f *minimalForwarder) loop() error {
	if f.delay > 0 || f.rate > 0 {
		return f.delayLoop()
	}
	const batch = 64
	bufs, sizes, part := make([][]byte, batch), make([]int, batch), make([]bool, batch)
	store := make([]byte, batch*1500)
	for i := range bufs {
		bufs[i] = store[i*1500 : (i+1)*1500]
	}
	pkts := make([][]byte, batch)
	pfd := []unix.PollFd{{Fd: int32(f.in.PollFd()), Events: unix.POLLIN}}
	for !f.stop.Load() {
		n, err := f.in.TryReadPartial(bufs, sizes, part)
		if err != nil {
			return fmt.Errorf("read %s: %w", f.in.Name(), err)
		}
		if n == 0 {
			// Level-triggered, 50 ms at most so that stop is seen.
			if _, err := unix.Poll(pfd, 50); err != nil && err != unix.EINTR {
				return fmt.Errorf("poll %s: %w", f.in.Name(), err)
			}
			continue
		}
		for i := range n {
			pkts[i] = bufs[i][:sizes[i]]
		}
		f.packets += uint64(n)
		if err := f.write(pkts[:n], part[:n]); err != nil {
			return err
		}
	}
	return nil
}

// delayLoop is loop with every packet held f.delay in a ring of slots
// before it is written, in arrival order, all the due ones at once: what
// a delay line costs a forwarder beyond moving packets (the payload copied
// in by the read is cold in the cache by the time the write copies it out:
// 6 MB are in flight at 5 Gbit/s and 10 ms). Without a rate every write
// carries whatever fell due since the last. With one, each packet leaves
// the link ceil(8·bytes·1e9/rate) ns after the one before it (or after
// its arrival, if the link was idle), and is due f.delay after that; the
// due packets are held for one write up to holdFor after the first fell
// due, while another falls due before then, as the hop holds them.
func (f *minimalForwarder) delayLoop() error {
	const batch, slots = 64, 1 << 15 // 48 MB: 10 ms at 39 Gbit/s
	const holdFor = 100_000          // ns, the hop's batchSleep
	const fastLink = 25_000          // ns on the wire: the hop's minSleep, under which it holds
	store := make([]byte, slots*1500)
	ring := make([][]byte, slots)
	for i := range ring {
		ring[i] = store[i*1500 : (i+1)*1500]
	}
	sizes, due, part := make([]int, slots), make([]int64, slots), make([]bool, slots)
	pkts, pparts := make([][]byte, batch), make([]bool, batch)
	pfd := []unix.PollFd{{Fd: int32(f.in.PollFd()), Events: unix.POLLIN}}
	var head, tail int // packets read, packets written
	var txEnd int64    // when the link finishes sending the last packet read
	link := shaper.Const{BitsPerSecond: f.rate}
	for !f.stop.Load() {
		now := nanotime()
		k := 0
		for ; tail+k < head && k < batch && due[(tail+k)%slots] <= now; k++ {
			i := (tail + k) % slots
			pkts[k], pparts[k] = ring[i][:sizes[i]], part[i]
		}
		flushBy := int64(-1)
		if k > 0 && f.rate > 0 && k < batch && link.Finish(0, sizes[tail%slots]) < fastLink {
			flushBy = due[tail%slots] + holdFor
			if now >= flushBy || tail+k == head || due[(tail+k)%slots] >= flushBy {
				flushBy = -1 // nothing more falls due in time: write now
			}
		}
		if k > 0 && flushBy < 0 {
			if err := f.write(pkts[:k], pparts[:k]); err != nil {
				return err
			}
			tail += k
			continue
		}
		if free := slots - (head - tail); free > 0 {
			i := head % slots
			m := min(batch, free, slots-i)
			n, err := f.in.TryReadPartial(ring[i:i+m], sizes[i:i+m], part[i:i+m])
			if err != nil {
				return fmt.Errorf("read %s: %w", f.in.Name(), err)
			}
			for j := i; j < i+n; j++ {
				due[j] = now + f.delay
				if f.rate > 0 {
					txEnd = link.Finish(max(txEnd, now), sizes[j])
					due[j] = txEnd + f.delay
				}
			}
			head += n
			f.packets += uint64(n)
			if n > 0 {
				continue
			}
		}
		wait := int64(50 * time.Millisecond) // at most, so that stop is seen
		if tail+k < head {
			wait = min(wait, max(due[(tail+k)%slots]-now, 0))
		}
		if flushBy >= 0 {
			wait = min(wait, max(flushBy-now, 0))
		}
		ts := unix.NsecToTimespec(wait)
		if _, err := unix.Ppoll(pfd, &ts, nil); err != nil && err != unix.EINTR {
			return fmt.Errorf("poll %s: %w", f.in.Name(), err)
		}
	}
	return nil
}

// write writes pkts coalesced, or one per call if f.single.
func (f *minimalForwarder) write(pkts [][]byte, part []bool) error {
	if !f.single {
		if _, err := f.out.WritePartial(pkts, part); err != nil {
			return fmt.Errorf("write %s: %w", f.out.Name(), err)
		}
		return nil
	}
	for i := range pkts {
		if _, err := f.out.WritePartial(pkts[i:i+1], part[i:i+1]); err != nil {
			return fmt.Errorf("write %s: %w", f.out.Name(), err)
		}
	}
	return nil
}

var start = time.Now()

func nanotime() int64 { return int64(time.Since(start)) }

// minimalPair is a Pair's topology (client and server namespaces, an
// offload TUN in each, the same addresses and default routes) with a
// minimalForwarder per direction in place of the hop. single applies to
// the data direction (client to server) only; the ACKs are written as
// they come.
type minimalPair struct {
	j        *netsys.Journal
	devs     []tun.Device
	up, down *minimalForwarder
}

func newMinimalPair(prefix string, single bool, delay time.Duration, rate uint64) (*minimalPair, path, error) {
	m := &minimalPair{j: netsys.NewJournal(nil)}
	c, s := prefix+"c", prefix+"s"
	srv4, srv6 := topology.DefaultSubnet4.Addr().Next(), topology.DefaultSubnet6.Addr().Next()
	ends := []struct {
		ns          string
		addr, addr6 netip.Addr
	}{{c, srv4.Next(), srv6.Next()}, {s, srv4, srv6}}
	fail := func(err error) (*minimalPair, path, error) {
		m.close()
		return nil, path{}, err
	}
	for _, e := range ends {
		if err := m.j.NewNamespace(e.ns); err != nil {
			return fail(err)
		}
		d, err := topology.OpenTUN(m.j, e.ns, "pi2hop0", 1500, tun.BackendOffload)
		if err != nil {
			return fail(err)
		}
		m.devs = append(m.devs, d)
		for _, a := range []netip.Prefix{
			netip.PrefixFrom(e.addr, topology.DefaultSubnet4.Bits()),
			netip.PrefixFrom(e.addr6, topology.DefaultSubnet6.Bits()),
		} {
			if err := m.j.AddAddr(e.ns, "pi2hop0", a); err != nil {
				return fail(err)
			}
		}
		for _, dst := range []string{"0.0.0.0/0", "::/0"} {
			if err := m.j.AddRoute(e.ns, netsys.Route{Dst: netip.MustParsePrefix(dst), Dev: "pi2hop0"}); err != nil {
				return fail(err)
			}
		}
	}
	cd, ok1 := m.devs[0].(interface {
		tun.PartialReader
		tun.PartialWriter
	})
	sd, ok2 := m.devs[1].(interface {
		tun.PartialReader
		tun.PartialWriter
	})
	if !ok1 || !ok2 {
		return fail(fmt.Errorf("minimal forwarder: the offload backend was refused (%T, %T)", m.devs[0], m.devs[1]))
	}
	m.up = &minimalForwarder{in: cd, out: sd, single: single, delay: int64(delay), rate: rate}
	m.down = &minimalForwarder{in: sd, out: cd, delay: int64(delay), rate: rate}
	m.up.start()
	m.down.start()
	return m, path{client: c, server: s, serverAddr: srv4, rxNS: s, rxDev: "pi2hop0"}, nil
}

// stop ends both forwarders and returns the first error either met.
func (m *minimalPair) stop() error {
	for _, f := range []*minimalForwarder{m.up, m.down} {
		if f != nil {
			f.stop.Store(true)
			f.done.Wait()
		}
	}
	if m.up != nil && m.up.err != nil {
		return m.up.err
	}
	if m.down != nil {
		return m.down.err
	}
	return nil
}

// close stops the forwarders, closes the devices and undoes the journal.
func (m *minimalPair) close() {
	m.stop()
	for _, d := range m.devs {
		d.Close()
	}
	m.j.Undo()
}

// baselineRow measures one bulk TCP transfer through a minimal pair, paced at
// bps in each direction (0: unpaced).
func baselineRow(prefix string, single bool, delay time.Duration, bps uint64) (rate float64, c cpuCount, segsPerWrite float64, err error) {
	m, p, err := newMinimalPair(prefix, single, delay, bps)
	if err != nil {
		return 0, c, 0, err
	}
	defer m.close()
	if delay > 0 {
		if err := bdpBuffers(p); err != nil {
			return 0, c, 0, err
		}
	}
	r, err := tcpRate(p)
	if err != nil {
		return 0, c, 0, err
	}
	rate = r.ip
	if err := m.stop(); err != nil {
		return 0, c, 0, err
	}
	c.up = ownerCount{cpu: m.up.cpu, sys: m.up.sys, packets: m.up.packets}
	c.down = ownerCount{cpu: m.down.cpu, sys: m.down.sys, packets: m.down.packets}
	if w := writesOf(m.devs[1], m.up.packets); w > 0 {
		segsPerWrite = float64(m.up.packets) / float64(w)
	}
	return rate, c, segsPerWrite, nil
}

// writesOf is the write system calls that carried written packets out of
// d: one per coalesced super-packet and one per packet written alone (a
// super-packet the kernel refused, written again packet by packet, counts
// as its packets). Without offload counters, one per packet.
func writesOf(d tun.Device, written uint64) uint64 {
	oc, ok := d.(tun.OffloadCounter)
	if !ok {
		return written
	}
	s := oc.OffloadStats()
	return s.Coalesced + written - min(written, s.CoalescedSegments)
}
