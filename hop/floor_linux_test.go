package hop

import (
	"testing"
	"time"
)

// TestFloorProbe starts the probe process (this test binary again) and
// waits for its reports: each 20 ms interval closes one entry of its Worst.
func TestFloorProbe(t *testing.T) {
	f, err := startFloor(0) // normal priority: the test may run unprivileged
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for f.stats().Worst.Seq < 5 {
		if time.Now().After(deadline) {
			f.stop()
			t.Fatalf("waited 5s for 5 reports of the floor probe, got %d", f.stats().Worst.Seq)
		}
		time.Sleep(10 * time.Millisecond)
	}
	f.stop()
	st := f.stats()
	if st.Running {
		t.Error("Running after stop")
	}
	if st.RealTime {
		t.Error("RealTime with priority 0")
	}
	// 5 reports cover >= 100 ms of 200 µs periods: at least one wake-up each
	// (the probe skips the periods it missed), at most 500.
	if st.Wakes < 5 || st.Wakes > uint64(st.Worst.Seq+1)*floorReport/floorPeriod {
		t.Errorf("%d wake-ups in %d reports", st.Wakes, st.Worst.Seq)
	}
	if st.Worst.Max < 0 {
		t.Errorf("worst lateness %d < 0", st.Worst.Max)
	}
}
