package hop

import (
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestFloorProbe starts the probe processes (this test binary again), one
// per CPU, and waits for their reports: each 20 ms interval of the first
// closes one entry of the Worst, and every CPU's probe reports.
func TestFloorProbe(t *testing.T) {
	f, err := startFloor(0) // normal priority: the test may run unprivileged
	if err != nil {
		t.Fatal(err)
	}
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for f.stats().Worst.Seq < 5 || slices.Contains(f.reported(), 0) {
		if time.Now().After(deadline) {
			f.stop()
			t.Fatalf("waited 5s for 5 reports of the floor probe and one of each CPU's, got %d; wake-ups per probe %v", f.stats().Worst.Seq, f.reported())
		}
		time.Sleep(10 * time.Millisecond)
	}
	f.stop()
	st := f.stats()
	if st.CPUs != set.Count() {
		t.Errorf("%d CPUs probed, want the %d this process may run on", st.CPUs, set.Count())
	}
	if st.Running {
		t.Error("Running after stop")
	}
	if st.RealTime {
		t.Error("RealTime with priority 0")
	}
	// A report covers >= 20 ms of 200 µs periods: at least one wake-up
	// (a probe skips the periods it missed), at most 100 per probe; the
	// others may have reported once more than the first when it stopped.
	if st.Wakes < 5 || st.Wakes > uint64(st.CPUs)*(st.Worst.Seq+2)*floorReport/floorPeriod {
		t.Errorf("%d wake-ups of %d probes in %d reports", st.Wakes, st.CPUs, st.Worst.Seq)
	}
	if st.Worst.Max < 0 {
		t.Errorf("worst lateness %d < 0", st.Worst.Max)
	}
}

// reported returns each probe's wake-ups so far.
func (f *floor) reported() []uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.wakes)
}
