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
		cpu, _ := threadCPU(o.rep.cpu.tid.Load())
		done <- result{o.rep.cpu.base.Load(), cpu - o.rep.cpu.base.Load()}
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
