//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package tty

func isTerminal(int) bool { return false }
