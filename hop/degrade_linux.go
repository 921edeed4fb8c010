package hop

import (
	"os"
	"runtime"

	"github.com/pi2hop/pi2hop/internal/privs"
	"golang.org/x/sys/unix"
)

// realTimeRefused says why the owners cannot run SCHED_FIFO at prio, or
// "" when they can. sched_setattr needs CAP_SYS_NICE or an RLIMIT_RTPRIO
// of at least prio (sched(7)); with either, a kernel with real-time group
// scheduling still refuses a task whose cgroup has no real-time runtime,
// as a container's has by default, so a thread of its own tries.
func realTimeRefused(prio int) string {
	var rl unix.Rlimit
	if !privs.Effective().Has(privs.SysNice) && (unix.Getrlimit(unix.RLIMIT_RTPRIO, &rl) != nil || rl.Cur < uint64(prio)) {
		return "no CAP_SYS_NICE (nor RLIMIT_RTPRIO)"
	}
	tried := make(chan error, 1)
	go func() {
		// The thread stays locked: it ends with the goroutine, and its
		// priority with it.
		runtime.LockOSThread()
		attr := unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_FIFO, Priority: uint32(prio), Flags: unix.SCHED_FLAG_RESET_ON_FORK}
		tried <- unix.SchedSetAttr(0, &attr, 0)
	}()
	if err := <-tried; err != nil {
		return "SCHED_FIFO refused (" + err.Error() + ") though CAP_SYS_NICE allows it: the cgroup grants no real-time runtime (cpu.rt_runtime_us; docker run --cpu-rt-runtime)"
	}
	return ""
}

// cpuLatencyAllowed opens the PM QoS device as Run will; the request made
// by the open alone asks for no limit and ends with the close.
func cpuLatencyAllowed() bool {
	f, err := os.OpenFile("/dev/cpu_dma_latency", os.O_WRONLY, 0)
	if err != nil {
		return false
	}
	f.Close()
	return true
}
