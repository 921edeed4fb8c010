//go:build unix

package pcaptest

import (
	"syscall"
	"time"
)

// CPUTime is the process's user plus system CPU time: on a shared
// machine a steadier figure for a benchmark than wall time.
func CPUTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
