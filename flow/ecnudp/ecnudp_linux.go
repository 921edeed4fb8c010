//go:build linux

package ecnudp

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// family returns AF_INET or AF_INET6 for c's socket.
func family(fd int) (int, error) {
	return unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_DOMAIN)
}

// The receive time: SO_TIMESTAMPNS attaches it as a timespec, in ns.
const (
	stampOpt     = unix.SO_TIMESTAMPNS
	stampOptName = "SO_TIMESTAMPNS"
	stampType    = unix.SCM_TIMESTAMPNS
)

// stampNano reads the receive time from a stampType control message.
func stampNano(data []byte) (int64, bool) {
	if len(data) < int(unsafe.Sizeof(unix.Timespec{})) {
		return 0, false
	}
	return (*unix.Timespec)(unsafe.Pointer(&data[0])).Nano(), true
}

// Linux delivers a received IPv4 TOS byte as an IP_TOS control message,
// and takes the per-packet override as an int.
const (
	recvTOSType = unix.IP_TOS
	sendTOSLen  = 4
)

// Linux delivers the received TTL (IP_RECVTTL) as an IP_TTL control
// message holding an int.
const recvTTLType = unix.IP_TTL

func ttlByte(data []byte) uint8 {
	if len(data) >= 4 {
		return uint8(binary.NativeEndian.Uint32(data))
	}
	return data[0]
}

// Precise locks the calling goroutine to its thread and sets that thread's
// timer slack to 1 ns (the default 50 µs would blur pacing). The thread
// is discarded when the goroutine exits, so call it from a goroutine of
// its own.
func Precise() {
	runtime.LockOSThread()
	_ = unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0)
}

// Favour gives the calling thread the highest CFS weight (nice -20) when
// the process may (root or CAP_SYS_NICE) and reports whether it did.
// udp_prague's endpoints run SCHED_RR as root (its UDPSocket asks for it):
// without a boost a busy machine holds an ACK or a paced packet back by
// milliseconds, and Prague's window, 3 % and one packet above rate·srtt,
// then stops the flow. Here we differ from udp_prague on purpose:
// SCHED_RR endpoints (below the hop's owners) can stop for most of a
// second while the hop keeps time, likely a stop-the-world of their own
// Go runtime waiting for a CFS thread that the real-time threads keep off
// every CPU until the kernel's fair server lets it run; at nice -20 no
// such stop shows (docs/performance.md).
// (Precise): setpriority on a thread id sets that thread only.
func Favour() bool {
	return unix.Setpriority(unix.PRIO_PROCESS, unix.Gettid(), -20) == nil
}

// Wait blocks until the socket is readable or d has passed (d <= 0 only
// polls). It reports whether the socket is readable.
func (w *Waiter) Wait(d time.Duration) (bool, error) {
	var readable bool
	err := control(w.c, func(fd int) error {
		ts := unix.NsecToTimespec(max(int64(d), 0))
		w.fds[0] = unix.PollFd{Fd: int32(fd), Events: unix.POLLIN}
		n, err := unix.Ppoll(w.fds[:], &ts, nil)
		if err == unix.EINTR {
			return nil // the runtime's preemption signal: the caller waits again
		}
		if err != nil {
			return fmt.Errorf("ppoll: %w", err)
		}
		readable = n > 0 && w.fds[0].Revents&(unix.POLLIN|unix.POLLERR) != 0
		return nil
	})
	return readable, err
}
