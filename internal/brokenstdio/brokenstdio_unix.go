//go:build unix

// Package brokenstdio ends a run like SIGTERM when its standard output or
// error has lost its reader, so a program killed by a closed pipe still
// undoes everything it made.
package brokenstdio

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"golang.org/x/sys/unix"
)

// Watch cancels the run when a SIGPIPE comes and standard output or error
// is a pipe or socket whose reader has gone: without this, Go's default
// for a write to a broken stdout is to die of the signal, leaving devices,
// rules and namespaces behind. A SIGPIPE from a socket whose peer left (a
// stats client that hung up) is that write's EPIPE, handled where it
// happened. Watch returns once it has cancelled; run it in a goroutine.
func Watch(cancel context.CancelFunc) {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGPIPE)
	for range sig {
		if broken(1, 2) {
			cancel()
			return
		}
	}
}

// broken reports whether any of fds reports an error or hang-up for
// writing (poll(2): POLLERR on a pipe whose read end is closed).
func broken(fds ...int) bool {
	pfds := make([]unix.PollFd, len(fds))
	for i, fd := range fds {
		pfds[i] = unix.PollFd{Fd: int32(fd), Events: unix.POLLOUT}
	}
	if n, err := unix.Poll(pfds, 0); err != nil || n == 0 {
		return false
	}
	for _, f := range pfds {
		if f.Revents&(unix.POLLERR|unix.POLLHUP) != 0 {
			return true
		}
	}
	return false
}
