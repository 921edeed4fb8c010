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
	start := time.Now()
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
	elapsed := time.Since(start)
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
	// A report covers >= 20 ms of 1 ms periods: at least one wake-up
	// (a probe skips the periods it missed). A probe wakes at most once a
	// period while it runs, and it runs at most from startFloor to stop.
	// (Not per report of the first probe: the probes are processes that
	// start at different times — under -race one started 0.6 s before the
	// other and had woken thousands of times more by the first one's 5th report.)
	if most := uint64(st.CPUs) * (uint64(elapsed/(floorPeriod*time.Nanosecond)) + 1); st.Wakes < 5 || st.Wakes > most {
		t.Errorf("%d wake-ups of %d probes in %v (%d reports of the first); want 5..%d", st.Wakes, st.CPUs, elapsed, st.Worst.Seq, most)
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
