//go:build darwin || freebsd

package ecnudp

import (
	"fmt"
	"runtime"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// family returns AF_INET or AF_INET6 for c's socket (the BSDs have no
// SO_DOMAIN to ask, so the bound address tells).
func family(fd int) (int, error) {
	sa, err := unix.Getsockname(fd)
	if err != nil {
		return 0, fmt.Errorf("getsockname: %w", err)
	}
	if _, ok := sa.(*unix.SockaddrInet6); ok {
		return unix.AF_INET6, nil
	}
	return unix.AF_INET, nil
}

// The receive time: SO_TIMESTAMP attaches it as a timeval, in µs.
const (
	stampOpt     = unix.SO_TIMESTAMP
	stampOptName = "SO_TIMESTAMP"
	stampType    = unix.SCM_TIMESTAMP
)

// stampNano reads the receive time from a stampType control message.
func stampNano(data []byte) (int64, bool) {
	if len(data) < int(unsafe.Sizeof(unix.Timeval{})) {
		return 0, false
	}
	return (*unix.Timeval)(unsafe.Pointer(&data[0])).Nano(), true
}

// The BSDs deliver a received IPv4 TOS byte as a control message of type
// IP_RECVTOS (the override's size, sendTOSLen, is per system).
const recvTOSType = unix.IP_RECVTOS

// They deliver the received TTL as one byte, of type IP_RECVTTL.
const recvTTLType = unix.IP_RECVTTL

func ttlByte(data []byte) uint8 { return data[0] }

// Precise locks the calling goroutine to its thread, as on Linux; these
// systems have no per-thread timer slack to lower.
func Precise() { runtime.LockOSThread() }

// Favour reports false: the BSDs' setpriority has no per-thread target,
// and raising the whole process is not the endpoint's to do.
func Favour() bool { return false }

// Wait blocks until the socket is readable or d has passed (d <= 0 only
// polls). It reports whether the socket is readable. poll(2) counts in
// ms: a wait of a ms or more polls for its whole ms and returns early by
// the rest, which the caller waits next; a shorter wait looks at the
// socket once and sleeps on a timer, so a paced sender is never a
// rounded-up ms late, and a datagram arriving meanwhile waits at most d.
func (w *Waiter) Wait(d time.Duration) (bool, error) {
	ms := max(int(d/time.Millisecond), 0)
	var readable bool
	err := control(w.c, func(fd int) error {
		w.fds[0] = unix.PollFd{Fd: int32(fd), Events: unix.POLLIN}
		n, err := unix.Poll(w.fds[:], ms)
		if err == unix.EINTR {
			return nil // the runtime's preemption signal: the caller waits again
		}
		if err != nil {
			return fmt.Errorf("poll: %w", err)
		}
		readable = n > 0 && w.fds[0].Revents&(unix.POLLIN|unix.POLLERR) != 0
		return nil
	})
	if err == nil && !readable && ms == 0 && d > 0 {
		time.Sleep(d)
	}
	return readable, err
}
