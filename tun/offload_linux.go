package tun

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// offloadDevice is a TUN opened with IFF_VNET_HDR and TUNSETOFFLOAD, so the
// kernel hands it TCP/UDP super-packets (TSO/USO) with partial checksums
// and takes them back the same way: far fewer system calls and passes
// through the kernel's stack per byte than one packet per read and write.
// What the hop sees stays one MTU-sized packet per buffer: reads are split
// into their segments (gso.go) and writes coalesced only where that changes
// no packet (gro.go).
//
// Like waterDevice, the descriptor is non-blocking and used only through
// RawConn (so a call racing with Close fails with os.ErrClosed), the
// callbacks are bound once so that no call allocates, and TryRead is for one
// reader and Write for one writer at a time.
type offloadDevice struct {
	file     *os.File
	rc       syscall.RawConn
	fd       int
	name     string
	mtu      int
	offloads Offloads
	nl       *netlink.Handle

	// Read side.
	split  splitter
	rvh    [vnetHdrLen]byte
	rbuf   []byte // a super-packet; the front part arrives in the caller's buffer
	riov   [3]unix.Iovec
	rIov   int // iovecs in use in riov
	rN     int
	rErr   error
	rTry   func(uintptr) bool
	rBlock func(uintptr) bool
	rs     OffloadStats // the reader's counters, published into pub

	// Write side.
	co   coalescer
	wiov [maxRun + 2]unix.Iovec
	wvh  [vnetHdrLen]byte // vnet header of a lone packet with a partial checksum
	wCnt int
	wErr error
	wFn  func(uintptr) bool
	ws   OffloadStats

	pub       offloadCounters
	closeOnce sync.Once
	closeErr  error
}

// zeroVnet is the vnet header of a packet written as it is: no GSO, its
// checksum complete (the receiving stack verifies it).
var zeroVnet [vnetHdrLen]byte

// maxRead is the largest packet a read can return: 64 KiB of GSO packet,
// and one more byte to tell a packet that fills the buffer from a longer,
// truncated one.
const maxRead = 65536 + 1

// openOffload creates TUN device name with a vnet header and the offloads
// the kernel accepts, in the calling thread's namespace. It fails, and the
// caller falls back to plain, unless at least checksum offload and TSO for
// both families are accepted.
func openOffload(name string, mtu int) (*offloadDevice, error) {
	fd, err := unix.Open("/dev/net/tun", unix.O_RDWR|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open /dev/net/tun: %w", err)
	}
	ifr, err := unix.NewIfreq(name)
	if err != nil {
		unix.Close(fd)
		return nil, err
	}
	ifr.SetUint16(unix.IFF_TUN | unix.IFF_NO_PI | unix.IFF_VNET_HDR)
	if err := unix.IoctlIfreq(fd, unix.TUNSETIFF, ifr); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("TUNSETIFF %s with IFF_VNET_HDR: %w", name, err)
	}
	// The header size is sizeof(struct virtio_net_hdr) by default; say so,
	// so that a changed default cannot shift every packet.
	if err := unix.IoctlSetPointerInt(fd, unix.TUNSETVNETHDRSZ, vnetHdrLen); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("TUNSETVNETHDRSZ %d: %w", vnetHdrLen, err)
	}
	off, err := setOffloads(fd)
	if err != nil {
		unix.Close(fd)
		return nil, err
	}
	d := &offloadDevice{
		file: os.NewFile(uintptr(fd), "/dev/net/tun"), fd: fd,
		name: ifr.Name(), mtu: mtu, offloads: off, rbuf: make([]byte, maxRead),
	}
	d.co = coalescer{tcp4: off&OffloadTSO4 != 0, tcp6: off&OffloadTSO6 != 0,
		udp4: off&OffloadUSO4 != 0, udp6: off&OffloadUSO6 != 0}
	d.rTry, d.rBlock, d.wFn = d.readvTry, d.readvBlock, d.writev
	rc, err := d.file.SyscallConn()
	if err == nil {
		d.rc = rc
		d.nl, err = netlink.NewHandle()
	}
	if err == nil {
		err = configureLink(d.nl, d.name, mtu, DefaultTxQueueLen)
	}
	if err != nil {
		d.Close()
		return nil, fmt.Errorf("set up %s: %w", name, err)
	}
	return d, nil
}

// setOffloads asks for checksum offload, TSO and USO, then without USO
// (the kernel refuses flags it does not know, and USO came in Linux 6.2),
// and returns what was accepted.
func setOffloads(fd int) (Offloads, error) {
	base := OffloadCsum | OffloadTSO4 | OffloadTSO6
	var err error
	for _, o := range []Offloads{base | OffloadUSO4 | OffloadUSO6, base} {
		if err = unix.IoctlSetInt(fd, unix.TUNSETOFFLOAD, int(o)); err == nil {
			return o, nil
		}
	}
	return 0, fmt.Errorf("TUNSETOFFLOAD %v: %w", base, err)
}

func (d *offloadDevice) Name() string       { return d.name }
func (d *offloadDevice) MTU() int           { return d.mtu }
func (d *offloadDevice) PollFd() int        { return d.fd }
func (d *offloadDevice) Offloads() Offloads { return d.offloads }
func (d *offloadDevice) Backend() string    { return "offload (" + d.offloads.String() + ")" }

// Read blocks until a packet is available, then reads like TryRead.
func (d *offloadDevice) Read(bufs [][]byte, sizes []int) (int, error) {
	if len(bufs) == 0 {
		return 0, nil
	}
	for {
		if n, err := d.read(bufs, sizes, nil, true); n > 0 || err != nil {
			return n, err
		}
	}
}

// TryRead fills bufs with packets: the segments of a super-packet (those
// that did not fit the last call's bufs first), or packets read as they
// are. It returns fewer than len(bufs) only when nothing is left to read,
// in the kernel or here. Dropped packets are counted (OffloadStats).
func (d *offloadDevice) TryRead(bufs [][]byte, sizes []int) (int, error) {
	return d.read(bufs, sizes, nil, false)
}

// TryReadPartial is TryRead, but leaves the TCP/UDP checksum of each
// segment cut from a super-packet partial, as the kernel handed it over,
// and sets partial[i] for those (len(partial) >= len(bufs)): the splitter's
// checksum pass over every byte is left to the kernel, which completes it
// (or checks nothing, delivering locally) when WritePartial hands the
// segment on with NEEDS_CSUM. Other packets are read as TryRead reads them.
func (d *offloadDevice) TryReadPartial(bufs [][]byte, sizes []int, partial []bool) (int, error) {
	return d.read(bufs, sizes, partial[:len(bufs)], false)
}

// read is TryRead, or TryReadPartial with partial; with block it waits for
// the device to become readable as long as nothing has been read.
func (d *offloadDevice) read(bufs [][]byte, sizes []int, partial []bool, block bool) (int, error) {
	i := 0
	defer d.publishRead()
	for i < len(bufs) {
		if d.split.pending() {
			n, r := d.split.next(bufs[i], partial != nil)
			if r != dropNone {
				d.rs.drop(r)
				continue
			}
			if partial != nil {
				partial[i] = true
			}
			sizes[i] = n
			d.rs.Segments++
			i++
			continue
		}
		n, err := d.readOne(bufs[i], block && i == 0)
		if err != nil || n == 0 {
			return i, err
		}
		if n > 0 {
			if partial != nil {
				partial[i] = false
			}
			sizes[i] = n
			i++
		}
	}
	return i, nil
}

// readOne reads one packet. A single packet lands in buf as it is (its
// checksum completed if partial) and its length is returned; a GSO packet
// is handed to the splitter (n < 0), and so is nothing on a drop. n == 0
// means nothing was waiting.
func (d *offloadDevice) readOne(buf []byte, block bool) (n int, err error) {
	l := min(len(buf), len(d.rbuf)-1)
	d.riov[0].Base = &d.rvh[0]
	d.riov[0].SetLen(vnetHdrLen)
	nio := 1
	if l > 0 {
		d.riov[1].Base = &buf[0]
		d.riov[1].SetLen(l)
		nio++
	}
	d.riov[nio].Base = &d.rbuf[l]
	d.riov[nio].SetLen(len(d.rbuf) - l)
	nio++
	fn := d.rTry
	if block {
		fn = d.rBlock
	}
	d.rIov = nio
	if err := d.rc.Read(fn); err != nil {
		return 0, os.ErrClosed
	}
	if d.rErr == unix.EAGAIN {
		return 0, nil
	}
	if d.rErr != nil {
		return 0, d.rErr
	}
	got := d.rN
	if got < vnetHdrLen {
		d.rs.BadVnet++
		return -1, nil
	}
	plen := got - vnetHdrLen
	if plen >= len(d.rbuf) {
		d.rs.TooBig++ // filled every byte: longer than any packet we accept
		return -1, nil
	}
	var h vnetHdr
	h.decode(d.rvh[:])
	if h.gsoType == gsoNone {
		if plen > l {
			d.rs.TooBig++
			return -1, nil
		}
		pkt := buf[:plen]
		if h.flags&vnetNeedsCsum != 0 {
			if r := completeChecksum(&h, pkt); r != dropNone {
				d.rs.drop(r)
				return -1, nil
			}
			d.rs.Completed++
		}
		return plen, nil
	}
	copy(d.rbuf[:min(plen, l)], buf)
	d.rs.SuperPackets++
	if r := d.split.start(&h, d.rbuf[:plen]); r != dropNone {
		d.rs.drop(r)
	}
	return -1, nil
}

// readvTry and readvBlock read one packet into d.riov[:d.rIov] and leave the
// byte count in d.rN; returning true means "done", false "wait until
// readable and call again" (RawConn.Read).
func (d *offloadDevice) readvTry(fd uintptr) bool {
	d.readv(fd)
	return true
}

func (d *offloadDevice) readvBlock(fd uintptr) bool {
	d.readv(fd)
	return d.rErr != unix.EAGAIN
}

// readv and writev use RawSyscall: neither blocks (the descriptor is
// non-blocking, a TUN write never waits), so there is no P to hand off,
// and skipping entersyscall/exitsyscall saves the owner the race with
// sysmon taking its P during a long write, after which exitsyscall spins
// to get a P back (docs/performance.md has the profile).
func (d *offloadDevice) readv(fd uintptr) {
	for {
		r, _, e := unix.RawSyscall(unix.SYS_READV, fd, uintptr(unsafe.Pointer(&d.riov[0])), uintptr(d.rIov))
		if e == unix.EINTR {
			continue
		}
		d.rN, d.rErr = int(r), nil
		if e != 0 {
			d.rN, d.rErr = 0, e
		}
		return
	}
}

// offloadCounters is OffloadStats for readers on other goroutines. Each
// side stores its own fields once per call (a plain store on most CPUs).
type offloadCounters struct {
	superPackets, segments, completed, coalesced, coalescedSegments, refused,
	badVnet, badHeaders, badGSOSize, tooBig atomic.Uint64
}

func (d *offloadDevice) publishRead() {
	p, s := &d.pub, &d.rs
	p.superPackets.Store(s.SuperPackets)
	p.segments.Store(s.Segments)
	p.completed.Store(s.Completed)
	p.badVnet.Store(s.BadVnet)
	p.badHeaders.Store(s.BadHeaders)
	p.badGSOSize.Store(s.BadGSOSize)
	p.tooBig.Store(s.TooBig)
}

func (d *offloadDevice) publishWrite() {
	p, s := &d.pub, &d.ws
	p.coalesced.Store(s.Coalesced)
	p.coalescedSegments.Store(s.CoalescedSegments)
	p.refused.Store(s.Refused)
}

// OffloadStats returns the backend's counters; safe from any goroutine.
func (d *offloadDevice) OffloadStats() OffloadStats {
	p := &d.pub
	return OffloadStats{
		SuperPackets: p.superPackets.Load(), Segments: p.segments.Load(), Completed: p.completed.Load(),
		Coalesced: p.coalesced.Load(), CoalescedSegments: p.coalescedSegments.Load(), Refused: p.refused.Load(),
		BadVnet: p.badVnet.Load(), BadHeaders: p.badHeaders.Load(), BadGSOSize: p.badGSOSize.Load(), TooBig: p.tooBig.Load(),
	}
}

// Write writes bufs in order, consecutive packets of a flow coalesced
// where gro.go allows, and returns how many were written before the first
// error. A super-packet the kernel refuses is written again packet by
// packet, so that an error always belongs to one packet.
func (d *offloadDevice) Write(bufs [][]byte) (int, error) { return d.write(bufs, nil) }

// WritePartial is Write, where partial[i] (len(partial) >= len(bufs)) says
// that bufs[i] carries a partial TCP/UDP checksum as TryReadPartial left
// it: alone it is written with NEEDS_CSUM from its L4 header, and in a
// super-packet it needs no verifying (the kernel computed its payload's
// checksum nowhere, so there is nothing a bad one could be laundered from).
func (d *offloadDevice) WritePartial(bufs [][]byte, partial []bool) (int, error) {
	return d.write(bufs, partial[:len(bufs)])
}

func (d *offloadDevice) write(bufs [][]byte, partial []bool) (int, error) {
	defer d.publishWrite()
	i := 0
	for i < len(bufs) {
		var part []bool
		if partial != nil {
			part = partial[i:]
		}
		n, hl := d.co.run(bufs[i:], part)
		if n > 1 {
			d.wiov[0].Base = &d.co.vh[0]
			d.wiov[0].SetLen(vnetHdrLen)
			d.wiov[1].Base = &d.co.hdr[0]
			d.wiov[1].SetLen(hl)
			for k := 0; k < n; k++ {
				p := bufs[i+k]
				d.wiov[2+k].Base = &p[hl]
				d.wiov[2+k].SetLen(len(p) - hl)
			}
			d.wCnt = n + 2
			err := d.rc.Write(d.wFn)
			if err != nil {
				return i, os.ErrClosed
			}
			if d.wErr == nil {
				d.ws.Coalesced++
				d.ws.CoalescedSegments += uint64(n)
				i += n
				continue
			}
			d.ws.Refused++
		}
		for end := i + n; i < end; i++ {
			if err := d.writeOne(bufs[i], partial != nil && partial[i]); err != nil {
				return i, err
			}
		}
	}
	return i, nil
}

// writeOne writes p alone: as it is, or with NEEDS_CSUM if its checksum
// is partial.
func (d *offloadDevice) writeOne(p []byte, partial bool) error {
	if len(p) == 0 {
		return errors.New("tun: empty packet")
	}
	d.wiov[0].Base = &zeroVnet[0]
	if partial {
		h, ok := partialVnet(p)
		if !ok {
			return errors.New("tun: partial checksum on a packet that is not TCP or UDP")
		}
		h.encode(d.wvh[:])
		d.wiov[0].Base = &d.wvh[0]
	}
	d.wiov[0].SetLen(vnetHdrLen)
	d.wiov[1].Base = &p[0]
	d.wiov[1].SetLen(len(p))
	d.wCnt = 2
	if err := d.rc.Write(d.wFn); err != nil {
		return os.ErrClosed
	}
	return d.wErr
}

// writev writes d.wiov[:d.wCnt] as one packet. A TUN write does not block:
// the kernel takes the packet into its receive path (or drops it) at once.
func (d *offloadDevice) writev(fd uintptr) bool {
	for {
		_, _, e := unix.RawSyscall(unix.SYS_WRITEV, fd, uintptr(unsafe.Pointer(&d.wiov[0])), uintptr(d.wCnt))
		if e == unix.EINTR {
			continue
		}
		d.wErr = nil
		if e != 0 {
			d.wErr = e
		}
		return true
	}
}

func (d *offloadDevice) RingDrops() (uint64, error) { return ringDrops(d.nl, d.name) }

func (d *offloadDevice) Close() error {
	d.closeOnce.Do(func() {
		d.closeErr = d.file.Close()
		if d.nl != nil {
			d.nl.Close()
		}
	})
	return d.closeErr
}
