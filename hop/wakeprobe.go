package hop

import (
	"sync"

	"github.com/pi2hop/pi2hop/internal/wakeprobe"
)

// WakeProbeStats is the machine's own timing floor while the hop runs:
// how late the wake-up probes (internal/wakeprobe: real-time threads that
// only sleep and wake, one pinned to each CPU) woke. Lateness of the
// owners beyond it is the hop's; up to it, the machine's.
type WakeProbeStats struct {
	Running  bool  // the probes run (Config.WakeProbe and they could start)
	RealTime bool  // they run SCHED_FIFO at the owners' priority
	CPUs     int   // CPUs probed, one probe thread pinned to each
	Period   int64 // their sleep, ns
	Wakes    uint64
	Worst    Worst // how late the latest of them woke, ns
}

// probes is the hop's side of the running wake-up probes.
type probes struct {
	mu    sync.Mutex
	st    WakeProbeStats
	wakes []uint64 // per probe
	rt    []bool   // per probe
	p     *wakeprobe.Probes
}

// startProbes starts the wake-up probes at priority prio and follows
// their reports.
func startProbes(prio int) (*probes, error) {
	w := &probes{}
	w.st.Running, w.st.Period = true, wakeprobe.Period
	p, err := wakeprobe.Start(prio, w.record, w.exited)
	if err != nil {
		return nil, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.p, w.st.CPUs = p, p.CPUs
	return w, nil
}

// record takes one probe's report: its worst wake-up over its last
// interval, its wake-ups so far and whether it runs real-time. Probe 0's
// reports close the intervals of st.Worst; the others' values fall into
// the interval open when they arrive, so an interval's worst is the
// worst of every CPU over about wakeprobe.ReportEvery.
func (w *probes) record(r wakeprobe.Report) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.wakes == nil {
		w.wakes, w.rt = make([]uint64, r.Of), make([]bool, r.Of)
	}
	w.st.Worst.Add(r.Worst)
	if r.Probe == 0 {
		w.st.Worst.Close()
	}
	w.wakes[r.Probe], w.rt[r.Probe] = r.Wakes, r.RealTime
	w.st.Wakes, w.st.RealTime = 0, true
	for k := range w.wakes {
		w.st.Wakes += w.wakes[k]
		w.st.RealTime = w.st.RealTime && w.rt[k]
	}
}

// exited notes that a probe is gone (killed, or it died).
func (w *probes) exited() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.st.Running = false
}

func (w *probes) stats() WakeProbeStats {
	if w == nil {
		return WakeProbeStats{}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.st
}

func (w *probes) stop() { w.p.Stop() }
