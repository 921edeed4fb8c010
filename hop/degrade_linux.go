package hop

import (
	"os"

	"github.com/pi2hop/pi2hop/internal/privs"
	"golang.org/x/sys/unix"
)

// realTimeAllowed: sched_setattr to SCHED_FIFO at prio needs
// CAP_SYS_NICE, or an RLIMIT_RTPRIO of at least prio (sched(7)).
func realTimeAllowed(prio int) bool {
	if privs.Effective().Has(privs.SysNice) {
		return true
	}
	var rl unix.Rlimit
	return unix.Getrlimit(unix.RLIMIT_RTPRIO, &rl) == nil && rl.Cur >= uint64(prio)
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
