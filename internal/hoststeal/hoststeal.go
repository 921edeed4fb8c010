// Package hoststeal reads the machine's steal time: the one definition
// of it that the lab's samples and bench-hop share.
package hoststeal

import (
	"bufio"
	"bytes"
	"os"
	"strconv"
	"time"
)

// userHZ is the unit of /proc/stat's CPU times: USER_HZ, 100 on every
// Linux architecture the kernel exports to user space.
const userHZ = 100

// Tick is steal's unit: Total rounds down to it, so a growth read
// between two calls may be short of the steal by up to one Tick.
const Tick = time.Second / userHZ

// Total returns the CPU time the hypervisor gave to something else
// while this machine's CPUs wanted to run, summed over the CPUs since
// boot ("steal", the 8th figure of /proc/stat's cpu line), or -1 where it
// cannot be read. On a VM it is the host's share of a run's noise: a
// wake-up probe that wakes tens of ms late while steal grows was stopped by
// the host, not by anything in the VM.
func Total() time.Duration {
	f, err := os.Open("/proc/stat")
	if err != nil {
		return -1
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	if !sc.Scan() {
		return -1
	}
	return parse(sc.Bytes())
}

// parse reads the steal figure from /proc/stat's first line
// ("cpu  user nice system idle iowait irq softirq steal ..."), -1 when
// the line has none (kernels before 2.6.11).
func parse(line []byte) time.Duration {
	f := bytes.Fields(line)
	if len(f) < 9 || string(f[0]) != "cpu" {
		return -1
	}
	ticks, err := strconv.ParseUint(string(f[8]), 10, 63)
	if err != nil {
		return -1
	}
	return time.Duration(ticks) * Tick
}
