package hop

import (
	"bytes"
	"encoding/binary"
	"os"
	"runtime"
	"testing"

	"github.com/pi2hop/pi2hop/internal/roottest"
	"golang.org/x/sys/unix"
)

func TestSleepClass(t *testing.T) {
	for _, tt := range []struct {
		d    int64
		want int
	}{{200_000, 0}, {499_999, 0}, {500_000, 1}, {1_999_999, 1}, {2_000_000, 2}, {10_000_000, 3}} {
		if got := sleepClass(tt.d); got != tt.want {
			t.Errorf("sleepClass(%d) = %d, want %d", tt.d, got, tt.want)
		}
	}
}

// The learnt lead follows a high envelope of the lateness: a run of late
// wake-ups raises it to near their lateness, early ones lower it slowly,
// and it stays within its bounds.
func TestSpinLead(t *testing.T) {
	o := &owner{spin: spinAuto}
	const d = 10_000_000 // a 10 ms sleep: class 3
	if got := o.spinLead(3, d); got != initialLate+leadMargin {
		t.Fatalf("first lead %d, want %d", got, initialLate+leadMargin)
	}
	for range 40 {
		o.learnLateness(3, 120_000)
	}
	if got := o.spinLead(3, d); got < 115_000+leadMargin || got > 120_000+leadMargin {
		t.Errorf("lead after 40 wake-ups 120 µs late: %d, want ~%d", got, 120_000+leadMargin)
	}
	o.learnLateness(3, 20_000)
	if got := o.spinLead(3, d); got < 110_000 {
		t.Errorf("one early wake-up dropped the lead to %d: it must fall slowly", got)
	}
	if got := o.spinLead(0, 300_000); got != initialLate+leadMargin {
		t.Errorf("another class's lead %d: classes must learn apart", got)
	}
	for range 400 {
		o.learnLateness(3, 0)
	}
	if got := o.spinLead(3, d); got != minLead {
		t.Errorf("lead after prompt wake-ups %d, want the floor %d", got, minLead)
	}
	for range 40 {
		o.learnLateness(3, 5_000_000)
	}
	if got := o.spinLead(3, d); got != maxLead {
		t.Errorf("lead after very late wake-ups %d, want the cap %d", got, maxLead)
	}
	if got := o.spinLead(3, 400_000); got != 100_000 {
		t.Errorf("lead for a 400 µs wait %d, want a quarter of it", got)
	}
	fixed := &owner{spin: 30_000}
	if got := fixed.spinLead(3, d); got != 30_000 {
		t.Errorf("fixed lead %d, want 30000", got)
	}
}

// plan splits each wait as wait's comment says: short waits spun through
// when the packet is alone or packets are far apart, batched otherwise;
// every other wait for a packet, lone or one of a run 120 µs apart (a
// 100 Mbit/s link), sleeps up to a lead and spins the rest, the learnt
// lead under a quarter of the wait; snapshots and spinOff get no lead.
func TestPlan(t *testing.T) {
	auto := &owner{spin: spinAuto, lastTx: 120_000} // 1500 B at 100 Mbit/s
	fast := &owner{spin: spinAuto, lastTx: 12_000}  // 1500 B at 1 Gbit/s
	off := &owner{spin: spinOff, lastTx: 120_000}
	fixed := &owner{spin: 100_000, lastTx: 120_000}
	for _, tt := range []struct {
		name        string
		o           *owner
		d           int64
		lone, stats bool
		sleep, lead int64
	}{
		{"deadline passed", auto, 0, false, false, 0, 0},
		{"short, far apart: spin", auto, 20_000, false, false, 0, 0},
		{"short, alone: spin", fast, 20_000, true, false, 0, 0},
		{"short, close together: batch", fast, 20_000, false, false, batchSleep, 0},
		{"short, spin off: batch", off, 20_000, true, false, batchSleep, 0},
		{"100 Mbit/s gap: a quarter", auto, 120_000, false, false, 90_000, 30_000},
		{"cut short by an arrival", auto, 40_000, false, false, 30_000, 10_000},
		{"lone 10 ms: the initial guess", auto, 10_000_000, true, false, 10_000_000 - initialLate - leadMargin, initialLate + leadMargin},
		{"snapshot: no lead", auto, 120_000, false, true, 120_000, 0},
		{"spin off: no lead", off, 120_000, false, false, 120_000, 0},
		{"fixed lead", fixed, 1_000_000, false, false, 900_000, 100_000},
		{"fixed lead over the wait: spin it all", fixed, 60_000, false, false, 0, 60_000},
	} {
		sleep, lead := tt.o.plan(tt.d, tt.lone, tt.stats)
		if sleep != tt.sleep || lead != tt.lead {
			t.Errorf("%s: plan(%d) = sleep %d, lead %d; want %d, %d", tt.name, tt.d, sleep, lead, tt.sleep, tt.lead)
		}
	}
}

// A held request shows as the system's current CPU latency target (what
// reading /dev/cpu_dma_latency returns), and closing it lifts it.
func TestRequestCPULatency(t *testing.T) {
	roottest.Need(t)
	before, err := currentCPULatency()
	if err != nil {
		t.Skipf("no PM QoS device: %v", err)
	}
	if before == 0 {
		t.Skip("another process already holds a 0 µs request")
	}
	req, err := requestCPULatency(0)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := currentCPULatency(); got != 0 {
		t.Errorf("with a 0 µs request held the target is %d µs", got)
	}
	req.Close()
	if got, _ := currentCPULatency(); got != before {
		t.Errorf("after closing the request the target is %d µs, want %d again", got, before)
	}
}

func currentCPULatency() (int32, error) {
	b, err := os.ReadFile("/dev/cpu_dma_latency")
	if err != nil {
		return 0, err
	}
	if len(b) < 4 {
		return 0, os.ErrInvalid
	}
	return int32(binary.NativeEndian.Uint32(b)), nil
}

// An owner's CPU time counts from when it took its thread: a thread that
// ran other goroutines first (a reused thread can show more CPU than the
// run's wall time) brings their time along.
func TestOwnerCPUFromLock(t *testing.T) {
	type result struct{ base, since int64 }
	done := make(chan result)
	go func() {
		runtime.LockOSThread() // the thread dies with this goroutine
		tid := int32(unix.Gettid())
		for cpu, _ := threadCPU(tid); cpu < 30e6; cpu, _ = threadCPU(tid) {
		}
		o := &owner{}
		if err := o.lockForRealTime(); err != nil {
			t.Error(err)
		}
		cpu, _ := threadCPU(o.tid.Load())
		done <- result{o.cpuBase.Load(), cpu - o.cpuBase.Load()}
	}()
	r := <-done
	// The base is the 30 ms burnt before; since then the thread did two
	// system calls and read /proc twice: µs, bounded here by 5 ms.
	if r.base < 30e6 || r.since < 0 || r.since > 5e6 {
		t.Errorf("CPU before the lock %d ns (want >= 30 ms), since %d ns (want 0-5 ms)", r.base, r.since)
	}
}

// threadCPU's parsing of /proc/PID/task/TID/stat: stime is the 13th
// field after the name, which may hold spaces and parentheses.
func TestStatFields(t *testing.T) {
	line := []byte("4242 (a (b) c) S 1 4242 4242 0 -1 4194560 100 0 0 0 17 23 0 0 20 0 1 0 5 0 0\n")
	i := bytes.LastIndexByte(line, ')')
	if f := nthField(line[i+1:], 12); string(f) != "23" {
		t.Errorf("stime field %q, want 23", f)
	}
	if f := nthField(line[i+1:], 40); f != nil {
		t.Errorf("field 40 of 22: %q, want none", f)
	}
	if v := atoi([]byte("12345 6")); v != 12345 {
		t.Errorf("atoi = %d, want 12345", v)
	}
}
