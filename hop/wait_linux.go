package hop

import (
	"bytes"
	"fmt"
	"runtime"
	"strconv"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// lockForRealTime pins the owner to its OS thread for good (the thread is
// discarded when the owner returns, with its settings) and sets the
// thread's timer slack to 1 ns, so ppoll wakes within µs of the deadline
// instead of up to the default slack (50 µs) late. With a priority it
// also makes the thread SCHED_FIFO: on a busy machine a normal thread
// waits for the CPU for ms after its wake-up, which would show as delay
// and pacing error. The kernel's RT throttling (sched_rt_runtime_us, 95 %
// by default) still leaves the rest of the system CPU time. Without the
// privilege the thread stays a normal one.
func (o *owner) lockForRealTime() error {
	runtime.LockOSThread()
	// The thread may have run other goroutines before this one locked
	// it: its CPU time until now is theirs. Stored before the tid, which
	// readers load first.
	tid := int32(unix.Gettid())
	cpu, sys := threadCPU(tid)
	c := &o.rep.cpu
	c.base.Store(cpu)
	c.sysBase.Store(sys)
	c.pubCPU, c.pubIn, c.onThread = cpu, o.st.In, true
	c.tid.Store(tid)
	// Raw system calls from here on, as all of the owner's (see rawPpoll):
	// the return from sched_setattr is already the real-time thread's.
	if _, _, e := unix.RawSyscall6(unix.SYS_PRCTL, unix.PR_SET_TIMERSLACK, 1, 0, 0, 0, 0); e != 0 {
		return fmt.Errorf("hop: timer slack: %w", e)
	}
	if o.pace.priority > 0 {
		attr := unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_FIFO, Priority: uint32(o.pace.priority)}
		if _, _, e := unix.RawSyscall(unix.SYS_SCHED_SETATTR, 0, uintptr(unsafe.Pointer(&attr)), 0); e != 0 {
			// Degradations said so at start-up; this is the thread's own word.
			o.h.cfg.Logger.Debug("hop: no real-time priority for the owner thread (pacing degraded)", "dir", o.dir.String(), "err", e)
		}
	}
	return nil
}

// wait sleeps until the input device is readable, the waker fires or the
// clock reaches deadline.
//
// Waking once per packet at 1 Gbit/s (one every 12 µs) costs more CPU than
// forwarding, so a link sending packets closer together than minSleep
// sleeps batchSleep: the packets due meanwhile are handled together in one
// pass, each at its scheduled time on the link's absolute schedule, so the
// rate is kept and only their release is up to batchSleep late; and they
// go to the output device together, where the offload backend writes a
// run of them in one system call. Otherwise short waits are spun through.
//
// A timed wake-up from ppoll lands late even with 1 ns timer slack (on a
// VM the vCPU may first have to be run by the host), and later the
// longer the sleep. So before every other timed deadline the owner
// sleeps until a lead before it and spins on the clock for the rest; the
// lead is learnt from the wake-ups themselves and kept under a quarter
// of the wait (see pacer.plan).
func (o *owner) wait(deadline int64) error {
	fds := [2]unix.PollFd{
		{Fd: int32(o.in.PollFd()), Events: unix.POLLIN},
		{Fd: int32(o.waker.fd), Events: unix.POLLIN},
	}
	o.inReady, o.wakeReady = true, false
	sleep, lead := o.pace.sleepFor(clock(), deadline, o.link.Pending() <= 1, deadline == o.rep.nextStats, len(o.wbufs) > 0)
	if sleep == 0 {
		for clock() < deadline {
		}
		return nil
	}
	ts := unix.NsecToTimespec(sleep)
	n, err := rawPpoll(&fds, &ts)
	if err == unix.EINTR {
		return nil
	}
	if err != nil {
		return err
	}
	o.inReady, o.wakeReady = fds[0].Revents != 0, fds[1].Revents != 0
	if n > 0 || lead == 0 {
		return nil
	}
	if o.pace.spin == spinAuto {
		o.pace.learnLateness(sleepClass(sleep+lead), clock()-(deadline-lead))
	}
	for clock() < deadline {
	}
	return nil
}

// rawPpoll is ppoll(2) on the owner's two descriptors, made as a raw
// system call: the Go scheduler does not see the owner blocked, so it
// stays _Grunning with its P for the whole sleep. Through Syscall
// (entersyscall/exitsyscall) the goroutine would sit in _Gsyscall, where
// the garbage collector scans its stack by taking its scan bit from
// whatever normal thread runs the mark worker; an owner woken meanwhile
// spins in exitsyscall (casgstatus) until the bit is back, and being
// SCHED_FIFO it keeps the worker off that CPU, so only the kernel's fair
// server ends the stall. With the raw call the collector must preempt
// the owner instead (a signal ends the ppoll with EINTR) and the owner
// parks on a futex, leaving its CPU to the worker. Keeping its P across
// the sleep also means the owner never waits for an idle P when it
// wakes. docs/design.md tells how the stall was found.
func rawPpoll(fds *[2]unix.PollFd, ts *unix.Timespec) (int, error) {
	n, _, e := unix.RawSyscall6(unix.SYS_PPOLL, uintptr(unsafe.Pointer(&fds[0])), uintptr(len(fds)), uintptr(unsafe.Pointer(ts)), 0, 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}

// pause sleeps d ns, by a raw system call for the reason rawPpoll gives.
func pause(d int64) {
	ts := unix.NsecToTimespec(d)
	unix.RawSyscall(unix.SYS_NANOSLEEP, uintptr(unsafe.Pointer(&ts)), 0, 0)
}

// waker is an eventfd that interrupts the owner's wait: stop, edits and
// stats requests. signal may race with close (a Stats call as the hop
// shuts down), so both take mu: a closed descriptor's number could
// already belong to another file.
type waker struct {
	mu sync.RWMutex
	fd int
}

func (w *waker) open() error {
	fd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		return fmt.Errorf("eventfd: %w", err)
	}
	w.fd = fd
	return nil
}

var wakeOne = []byte{1, 0, 0, 0, 0, 0, 0, 0}

func (w *waker) signal() {
	w.mu.RLock()
	defer w.mu.RUnlock()
	if w.fd >= 0 {
		unix.Write(w.fd, wakeOne)
	}
}

// drain resets the counter; only the owner calls it, before close. A raw
// system call, as all of the owner's (see rawPpoll).
func (w *waker) drain() {
	var b [8]byte
	unix.RawSyscall(unix.SYS_READ, uintptr(w.fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
}

func (w *waker) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.fd >= 0 {
		unix.Close(w.fd)
		w.fd = -1
	}
}

// threadCPU returns the CPU time thread tid of this process has used, ns
// (the first field of its schedstat), and the part of it in the kernel
// (stime in its stat, in clock ticks), or 0 if they cannot be read. Every
// stats snapshot calls it: it reads into a buffer on the stack, so a
// crowd of stats requests leaves no garbage behind it.
func threadCPU(tid int32) (cpu, sys int64) {
	if tid <= 0 {
		return 0, 0
	}
	dir := "/proc/self/task/" + strconv.Itoa(int(tid))
	var buf [1024]byte // a stat line is some 300 bytes
	b := readSmall(dir+"/schedstat", buf[:])
	if b == nil {
		return 0, 0
	}
	if i := bytes.IndexByte(b, ' '); i >= 0 {
		b = b[:i]
	}
	cpu = atoi(b)
	b = readSmall(dir+"/stat", buf[:])
	// The name in parentheses may hold spaces; stime is the 15th field,
	// the 13th after it (proc_pid_stat(5)).
	if i := bytes.LastIndexByte(b, ')'); i >= 0 {
		if f := nthField(b[i+1:], 12); f != nil {
			sys = atoi(f) * (1e9 / clockTicks)
		}
	}
	return cpu, sys
}

// readSmall reads the file at path into buf, nil on an error.
func readSmall(path string, buf []byte) []byte {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	defer unix.Close(fd)
	n, err := unix.Read(fd, buf)
	if err != nil || n <= 0 {
		return nil
	}
	return buf[:n]
}

// nthField returns b's field n (from 0) of those separated by spaces.
func nthField(b []byte, n int) []byte {
	for i := 0; ; i++ {
		b = bytes.TrimLeft(b, " \n")
		if len(b) == 0 {
			return nil
		}
		end := bytes.IndexAny(b, " \n")
		if end < 0 {
			end = len(b)
		}
		if i == n {
			return b[:end]
		}
		b = b[end:]
	}
}

// atoi parses the decimal digits at the start of b, 0 without any.
func atoi(b []byte) int64 {
	var v int64
	for _, c := range b {
		if c < '0' || c > '9' {
			break
		}
		v = v*10 + int64(c-'0')
	}
	return v
}

// selfCPU returns the calling thread's CPU time, ns (0 when unknown): the
// same sum threadCPU reads from schedstat, by a raw system call, as the
// owner makes all of its own.
func selfCPU() int64 {
	var ts unix.Timespec
	if _, _, e := unix.RawSyscall(unix.SYS_CLOCK_GETTIME, unix.CLOCK_THREAD_CPUTIME_ID, uintptr(unsafe.Pointer(&ts)), 0); e != 0 {
		return 0
	}
	return ts.Nano()
}

// clockTicks is USER_HZ, the unit of /proc's times: 100 on every Linux
// architecture Go runs on.
const clockTicks = 100
