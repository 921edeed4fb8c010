//go:build darwin || freebsd || netbsd || openbsd || dragonfly

package tty

import "golang.org/x/sys/unix"

const ioctlGetTermios = unix.TIOCGETA
