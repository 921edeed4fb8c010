//go:build unix

package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"golang.org/x/sys/unix"
)

// endOnBrokenStdio ends the run like SIGTERM (so every change is undone)
// when a SIGPIPE comes and standard output or error is a pipe or socket
// whose reader has gone: without this, Go's default for a write to a
// broken stdout is to die of the signal, leaving devices, rules and
// namespaces behind. A SIGPIPE from a socket whose peer left (a stats
// client that hung up) is that write's EPIPE, handled where it happened.
func endOnBrokenStdio(cancel context.CancelFunc) {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGPIPE)
	for range sig {
		if stdioBroken() {
			cancel()
			return
		}
	}
}

// stdioBroken reports whether fd 1 or 2 reports an error or hang-up for
// writing (poll(2): POLLERR on a pipe whose read end is closed).
func stdioBroken() bool {
	fds := []unix.PollFd{{Fd: 1, Events: unix.POLLOUT}, {Fd: 2, Events: unix.POLLOUT}}
	if n, err := unix.Poll(fds, 0); err != nil || n == 0 {
		return false
	}
	for _, f := range fds {
		if f.Revents&(unix.POLLERR|unix.POLLHUP) != 0 {
			return true
		}
	}
	return false
}
