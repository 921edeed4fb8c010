package tun

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"syscall"
	"unsafe"

	"github.com/songgao/water"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// waterDevice is a TUN device opened through songgao/water. water opens
// /dev/net/tun non-blocking, so the os.File serves blocking Reads through
// the Go netpoller while TryRead and Write use the raw descriptor directly.
//
// The raw descriptor is used only through RawConn, which holds a reference
// on it, so a TryRead or Write racing with Close fails with os.ErrClosed
// instead of touching a reused descriptor number. TryRead is for one reader
// and Write for one writer at a time (the hop's owners); the scratch fields
// below let the RawConn callbacks be bound once, with no allocation per call.
type waterDevice struct {
	ifce *water.Interface
	file *os.File
	rc   syscall.RawConn
	fd   int
	name string
	mtu  int
	nl   *netlink.Handle // in the device's namespace, for RingDrops

	rBuf  []byte
	rN    int
	rErr  error
	rFunc func(uintptr) bool
	wBuf  []byte
	wErr  error
	wFunc func(uintptr) bool

	why string // why not the offload backend, when that was asked for

	closeOnce sync.Once
	closeErr  error
}

// Open creates TUN device name in the calling thread's network namespace
// (run it inside netsys.Do for another one) with the default backend (BackendOffload,
// falling back to plain), sets its MTU and txqueuelen and brings it up.
// The device disappears when it is closed.
func Open(name string, mtu int) (Device, error) { return OpenBackend(name, mtu, BackendOffload) }

// OpenBackend is Open with a chosen backend. BackendOffload falls back to
// plain when the kernel refuses the vnet header or the offloads; the
// device's Backend method then says why.
func OpenBackend(name string, mtu int, b Backend) (Device, error) {
	if len(name) == 0 || len(name) >= unix.IFNAMSIZ {
		return nil, fmt.Errorf("tun: device name %q: want 1 to %d characters", name, unix.IFNAMSIZ-1)
	}
	if mtu < 576 || mtu > 65535 {
		return nil, fmt.Errorf("tun: MTU %d for %s: want 576..65535", mtu, name)
	}
	switch b {
	case BackendPlain:
		return openWater(name, mtu, "")
	case BackendOffload, "":
		d, err := openOffload(name, mtu)
		if err == nil {
			return d, nil
		}
		return openWater(name, mtu, err.Error())
	}
	return nil, fmt.Errorf("tun: backend %q: want %s or %s", b, BackendOffload, BackendPlain)
}

func openWater(name string, mtu int, why string) (Device, error) {
	// water opens /dev/net/tun without O_CLOEXEC, so every program
	// started after (a shell's command) would inherit the device and
	// could write packets past the bottleneck. ForkLock keeps a fork
	// from coming between the open and the flag.
	syscall.ForkLock.RLock()
	ifce, err := water.New(water.Config{
		DeviceType:             water.TUN,
		PlatformSpecificParams: water.PlatformSpecificParams{Name: name},
	})
	if err == nil {
		if f, ok := ifce.ReadWriteCloser.(*os.File); ok {
			if rc, rerr := f.SyscallConn(); rerr == nil { // not f.Fd(): it would make the file blocking
				rc.Control(func(fd uintptr) { syscall.CloseOnExec(int(fd)) })
			}
		}
	}
	syscall.ForkLock.RUnlock()
	if err != nil {
		return nil, fmt.Errorf("tun: create %s: %w", name, err)
	}
	d := &waterDevice{ifce: ifce, name: ifce.Name(), mtu: mtu, why: why}
	f, ok := ifce.ReadWriteCloser.(*os.File)
	if !ok {
		ifce.Close()
		return nil, fmt.Errorf("tun: %s: water returned %T, want *os.File", name, ifce.ReadWriteCloser)
	}
	d.file = f
	d.rFunc, d.wFunc = d.readRaw, d.writeRaw
	rc, err := f.SyscallConn()
	if err == nil {
		d.rc = rc
		err = rc.Control(func(fd uintptr) { d.fd = int(fd) })
	}
	if err == nil {
		d.nl, err = netlink.NewHandle() // sockets live in this thread's namespace
	}
	if err == nil {
		err = configureLink(d.nl, d.name, mtu, DefaultTxQueueLen)
	}
	if err != nil {
		d.Close()
		return nil, fmt.Errorf("tun: set up %s: %w", name, err)
	}
	return d, nil
}

// configureLink sets MTU and ring length and brings the link up.
func configureLink(h *netlink.Handle, name string, mtu, txqlen int) error {
	l, err := h.LinkByName(name)
	if err != nil {
		return err
	}
	if err := h.LinkSetMTU(l, mtu); err != nil {
		return fmt.Errorf("mtu %d: %w", mtu, err)
	}
	if err := h.LinkSetTxQLen(l, txqlen); err != nil {
		return fmt.Errorf("txqueuelen %d: %w", txqlen, err)
	}
	return h.LinkSetUp(l)
}

func (d *waterDevice) Name() string { return d.name }
func (d *waterDevice) MTU() int     { return d.mtu }
func (d *waterDevice) PollFd() int  { return d.fd }

func (d *waterDevice) Backend() string {
	if d.why != "" {
		return "plain (no offload: " + d.why + ")"
	}
	return "plain"
}

func (d *waterDevice) Read(bufs [][]byte, sizes []int) (int, error) {
	if len(bufs) == 0 {
		return 0, nil
	}
	n, err := d.file.Read(bufs[0])
	if err != nil {
		return 0, err
	}
	sizes[0] = n
	// Take whatever else is already waiting, without blocking again.
	m, err := d.TryRead(bufs[1:], sizes[1:])
	return 1 + m, err
}

func (d *waterDevice) TryRead(bufs [][]byte, sizes []int) (int, error) {
	for i := range bufs {
		d.rBuf = bufs[i]
		if err := d.rc.Read(d.rFunc); err != nil {
			return i, os.ErrClosed
		}
		d.rBuf = nil
		if d.rErr == unix.EAGAIN {
			return i, nil
		}
		if d.rErr != nil {
			return i, d.rErr
		}
		sizes[i] = d.rN
	}
	return len(bufs), nil
}

// readRaw reads one packet; returning true means "done, don't wait". Like
// the offload backend's readv it is a raw system call, for the reason
// rawRW gives.
func (d *waterDevice) readRaw(fd uintptr) bool {
	d.rN, d.rErr = rawRW(unix.SYS_READ, fd, d.rBuf)
	return true
}

func (d *waterDevice) Write(bufs [][]byte) (int, error) {
	for i, b := range bufs {
		d.wBuf = b
		err := d.rc.Write(d.wFunc)
		d.wBuf = nil
		if err != nil {
			return i, os.ErrClosed
		}
		if d.wErr != nil {
			return i, d.wErr
		}
	}
	return len(bufs), nil
}

// writeRaw writes one packet. A TUN write does not block: the kernel takes
// the packet into its receive path (or drops it) at once.
func (d *waterDevice) writeRaw(fd uintptr) bool {
	_, d.wErr = rawRW(unix.SYS_WRITE, fd, d.wBuf)
	return true
}

// rawRW is read(2) or write(2) of b on the non-blocking descriptor fd as a
// raw system call, retried on EINTR. A hop owner is a SCHED_FIFO thread
// and must never enter the Go scheduler's system call state: leaving it, a
// goroutine waits for its scan bit, which the garbage collector or sysmon
// may hold from a normal thread the owner has just preempted on its CPU
// (see hop's rawPpoll). Neither call blocks, so there is no P to hand off.
func rawRW(nr, fd uintptr, b []byte) (int, error) {
	var p unsafe.Pointer
	if len(b) > 0 {
		p = unsafe.Pointer(&b[0])
	}
	for {
		r, _, e := unix.RawSyscall(nr, fd, uintptr(p), uintptr(len(b)))
		switch e {
		case 0:
			return int(r), nil
		case unix.EINTR:
			continue
		}
		return 0, e
	}
}

func (d *waterDevice) RingDrops() (uint64, error) { return ringDrops(d.nl, d.name) }

// ringDrops reads device name's tx_dropped: packets the kernel could not
// queue for us because the TUN ring was full.
func ringDrops(nl *netlink.Handle, name string) (uint64, error) {
	if nl == nil {
		return 0, errors.New("tun: no netlink handle")
	}
	l, err := nl.LinkByName(name)
	if err != nil {
		return 0, err
	}
	if s := l.Attrs().Statistics; s != nil {
		return s.TxDropped, nil
	}
	return 0, nil
}

func (d *waterDevice) Close() error {
	d.closeOnce.Do(func() {
		d.closeErr = d.ifce.Close()
		if d.nl != nil {
			d.nl.Close()
		}
	})
	return d.closeErr
}
