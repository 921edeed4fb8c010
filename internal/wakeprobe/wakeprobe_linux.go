package wakeprobe

import (
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A probe is a process of its own (this executable again, with env set)
// because a thread of the hop's process would share its runtime: a
// stop-the-world or a wait for a P would show in both, and the probe
// could no longer tell the machine's stalls from ours.

func init() {
	if v := os.Getenv(env); v != "" {
		// "prio,cpu", as Start sets it.
		p, c, _ := strings.Cut(v, ",")
		prio, _ := strconv.Atoi(p)
		cpu, err := strconv.Atoi(c)
		if err != nil {
			cpu = -1
		}
		os.Exit(probeMain(prio, cpu))
	}
}

// record is one report of the probe on its stdout: the interval's
// sequence number, its worst wake-up lateness (ns), wake-ups so far and
// whether the thread runs SCHED_FIFO; little-endian uint64s.
const record = 4 * 8

// probeMain is the probe process for one CPU: a thread pinned to cpu
// (none when cpu < 0), at SCHED_FIFO prio (when permitted), timer slack
// 1 ns, memory locked, that sleeps Period on
// an absolute CLOCK_MONOTONIC schedule with clock_nanosleep and records
// how late each wake-up is, as cyclictest does. Its loop allocates
// nothing (its garbage collector never runs) and makes only raw system
// calls, so the Go scheduler never sees it blocked; with one P and no
// other goroutine it stays on its thread (checked each report) and a
// preemption is a reschedule in place. The goroutine is not locked to its
// thread on purpose: a locked one would be handed back through another
// thread at each preemption (see hop's rawPpoll). It returns when the
// caller stops reading its reports.
func probeMain(prio, cpu int) int {
	_ = unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(unix.SIGKILL), 0, 0, 0)
	_ = unix.Mlockall(unix.MCL_CURRENT | unix.MCL_FUTURE)
	var tid int
	var rt uint64
	setup := func() {
		tid = unix.Gettid()
		if cpu >= 0 {
			var set unix.CPUSet
			set.Set(cpu)
			_ = unix.SchedSetaffinity(0, &set)
		}
		_ = unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0)
		rt = 0
		if prio > 0 {
			attr := unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_FIFO, Priority: uint32(prio), Flags: unix.SCHED_FLAG_RESET_ON_FORK}
			if unix.SchedSetAttr(0, &attr, 0) == nil {
				rt = 1
			}
		}
	}
	setup()
	base := time.Now()
	now := func() int64 { return int64(time.Since(base)) } // vDSO: no system call
	var rec [record]byte
	var seq, wakes uint64
	var worst int64
	var ts unix.Timespec
	mono := func(t int64) unix.Timespec { return unix.NsecToTimespec(t) }
	unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	offset := ts.Nano() - now() // CLOCK_MONOTONIC at our time 0 (Go's clock is CLOCK_MONOTONIC too)
	next := now()
	report := next + ReportEvery
	for {
		next += Period
		ts = mono(next + offset)
		unix.RawSyscall6(unix.SYS_CLOCK_NANOSLEEP, unix.CLOCK_MONOTONIC, unix.TIMER_ABSTIME,
			uintptr(unsafe.Pointer(&ts)), 0, 0, 0) // EINTR: woke early, never late
		woke := now()
		if woke < next {
			next -= Period // interrupted early: sleep to the same deadline again
			continue
		}
		wakes++
		worst = max(worst, woke-next)
		if woke > next+Period {
			next = woke // missed wake-ups are not late wake-ups: start over from now
		}
		if woke >= report {
			seq++
			binary.LittleEndian.PutUint64(rec[0:], seq)
			binary.LittleEndian.PutUint64(rec[8:], uint64(worst))
			binary.LittleEndian.PutUint64(rec[16:], wakes)
			binary.LittleEndian.PutUint64(rec[24:], rt)
			if _, _, errno := unix.RawSyscall(unix.SYS_WRITE, 1, uintptr(unsafe.Pointer(&rec[0])), record); errno != 0 {
				return 0
			}
			worst = 0
			report = woke + ReportEvery
			if t, _, _ := unix.RawSyscall(unix.SYS_GETTID, 0, 0, 0); int(t) != tid {
				setup() // moved to another thread after all: make that one real-time
			}
		}
	}
}

// Start starts a probe at SCHED_FIFO priority prio (normal priority when
// prio <= 0 or not permitted) on each CPU this process may run on, and
// hands every report of theirs to report and every probe's end to exited,
// each from the goroutine that follows that probe.
func Start(prio int, report func(Report), exited func()) (*Probes, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("wakeprobe: %w", err)
	}
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil, fmt.Errorf("wakeprobe: CPUs: %w", err)
	}
	var cpus []int
	for c := 0; c < len(set)*64 && len(cpus) < set.Count(); c++ {
		if set.IsSet(c) {
			cpus = append(cpus, c)
		}
	}
	var stops []func()
	p := &Probes{CPUs: len(cpus), stop: func() {
		for _, s := range stops {
			s()
		}
	}}
	for i, c := range cpus {
		s, err := startProbe(exe, prio, c, func(worst int64, wakes uint64, rt bool) {
			report(Report{Probe: i, Of: len(cpus), Worst: worst, Wakes: wakes, RealTime: rt})
		}, exited)
		if err != nil {
			p.Stop()
			return nil, err
		}
		stops = append(stops, s)
	}
	return p, nil
}

// startProbe starts the probe process for cpu and a goroutine that hands
// each of its reports to rec, and exited when it ends. stop kills it and
// waits for both.
func startProbe(exe string, prio, cpu int, rec func(worst int64, wakes uint64, rt bool), exited func()) (stop func(), err error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("wakeprobe: %w", err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%d,%d", env, max(prio, 0), cpu), "GOMAXPROCS=1", "GOGC=off")
	cmd.Stdout = w
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		r.Close()
		w.Close()
		return nil, fmt.Errorf("wakeprobe: start %s: %w", exe, err)
	}
	w.Close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		var b [record]byte
		for {
			if _, err := io.ReadFull(r, b[:]); err != nil {
				exited()
				return
			}
			rec(int64(binary.LittleEndian.Uint64(b[8:])), binary.LittleEndian.Uint64(b[16:]), binary.LittleEndian.Uint64(b[24:]) == 1)
		}
	}()
	return func() {
		cmd.Process.Kill()
		cmd.Wait()
		r.Close()
		<-done
	}, nil
}
