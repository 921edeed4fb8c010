package wakeprobe

import (
	"slices"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestProbes starts the probe processes (this test binary again), one per
// CPU, and waits for their reports: five of the first probe's, and one of
// every CPU's.
func TestProbes(t *testing.T) {
	start := time.Now()
	var (
		mu     sync.Mutex
		first  int      // reports of probe 0
		wakes  []uint64 // per probe, the latest report's
		rt     bool
		worst  int64 = -1
		exited int
	)
	p, err := Start(0, func(r Report) { // normal priority: the test may run unprivileged
		mu.Lock()
		defer mu.Unlock()
		if r.Probe == 0 {
			first++
		}
		for len(wakes) <= r.Probe {
			wakes = append(wakes, 0)
		}
		wakes[r.Probe] = r.Wakes
		rt = rt || r.RealTime
		worst = max(worst, r.Worst)
	}, func() {
		mu.Lock()
		defer mu.Unlock()
		exited++
	})
	if err != nil {
		t.Fatal(err)
	}
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		t.Fatal(err)
	}
	done := func() bool {
		mu.Lock()
		defer mu.Unlock()
		return first >= 5 && len(wakes) == p.CPUs && !slices.Contains(wakes, 0)
	}
	deadline := time.Now().Add(5 * time.Second)
	for !done() {
		if time.Now().After(deadline) {
			p.Stop()
			mu.Lock()
			defer mu.Unlock()
			t.Fatalf("waited 5s for 5 reports of the first probe and one of each CPU's, got %d; wake-ups per probe %v", first, wakes)
		}
		time.Sleep(10 * time.Millisecond)
	}
	p.Stop()
	elapsed := time.Since(start)
	mu.Lock()
	defer mu.Unlock()
	if p.CPUs != set.Count() {
		t.Errorf("%d CPUs probed, want the %d this process may run on", p.CPUs, set.Count())
	}
	if exited != p.CPUs {
		t.Errorf("%d probes ended after Stop, want %d", exited, p.CPUs)
	}
	if rt {
		t.Error("a probe runs real-time with priority 0")
	}
	// A report covers >= 20 ms of 1 ms periods: at least one wake-up
	// (a probe skips the periods it missed). A probe wakes at most once a
	// period while it runs, and it runs at most from Start to Stop.
	// (Not per report of the first probe: the probes are processes that
	// start at different times, under -race far apart, so the other may have
	// woken many times more by the first one's 5th report.)
	var all uint64
	for _, w := range wakes {
		all += w
	}
	if most := uint64(p.CPUs) * (uint64(elapsed/(Period*time.Nanosecond)) + 1); all < 5 || all > most {
		t.Errorf("%d wake-ups of %d probes in %v (%d reports of the first); want 5..%d", all, p.CPUs, elapsed, first, most)
	}
	if worst < 0 {
		t.Errorf("worst lateness %d < 0", worst)
	}
}
