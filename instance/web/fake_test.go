package web

import (
	"fmt"
	"sync"
	"time"

	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/hop"
	"github.com/pi2hop/pi2hop/instance"
	"github.com/pi2hop/pi2hop/lan"
	"github.com/pi2hop/pi2hop/shaper"
)

// fakeSource is a hop that sends at its link rate in both directions:
// its counters follow the wall clock, and Set changes its rate as the
// hop's Reconfigure would.
type fakeSource struct {
	mu    sync.Mutex
	start time.Time
	bps   uint64
	last  int64   // Elapsed of the previous snapshot
	bytes float64 // sent so far, at the rates in force
	sets  []instance.Settings
	flows []Flow
}

func newFake(bps uint64, flows []Flow) *fakeSource {
	return &fakeSource{start: time.Now(), bps: bps, flows: flows}
}

func (f *fakeSource) Stats() (hop.Snapshot, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := time.Now()
	el := now.Sub(f.start).Nanoseconds()
	f.bytes += float64(f.bps) / 8 * float64(el-f.last) / 1e9
	f.last = el
	snap := hop.Snapshot{Name: "fake", Running: true}
	for _, d := range []hop.Dir{hop.Up, hop.Down} {
		s := snap.Dir(d)
		s.Dir, s.Taken, s.Elapsed, s.Kind, s.Bps = d, now, el, "dualpi2", f.bps
		s.Rate = shaper.FormatRate(f.bps)
		s.OutBytes = uint64(f.bytes)
		s.Link.Busy = el * 9 / 10
		s.SojournL.Add(1e6)
		s.SojournC.Add(20e6)
		s.QueueDrops[aqm.ReasonClassic] = uint64(el / 1e8) // ten a second
	}
	return snap, true
}

func (f *fakeSource) Clients() ([]lan.Client, error) { return nil, nil }

func (f *fakeSource) Set(s instance.Settings) ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sets = append(f.sets, s)
	if s.Rate != nil {
		f.bps = *s.Rate
	}
	return nil, nil
}

func (f *fakeSource) Flows(*hop.Snapshot) []Flow {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.flows
}

func (f *fakeSource) setFlows(fl []Flow) {
	f.mu.Lock()
	f.flows = fl
	f.mu.Unlock()
}

func (f *fakeSource) rate() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.bps
}

// rttP50 is the L4S flow's RTT median in threeFlows.
var rttP50 = 20.4

// threeFlows are one flow of each codepoint class.
func threeFlows() []Flow {
	return []Flow{
		{Dir: "down", Proto: "udp", Src: "10.0.0.1:5000", Dst: "10.0.0.2:6000", Class: "L4S", Queue: "L",
			Rate: 4e6, Bytes: 1 << 20, Marks: 120, P99: 0.9, RTT: "20.4/23.1ms", RTTP50: &rttP50, Verdict: "well-behaved"},
		{Dir: "down", Proto: "tcp", Src: "10.0.0.1:80", Dst: "10.0.0.2:40000", Class: "Not-ECT", Queue: "C",
			Rate: 3e6, Bytes: 1 << 19, Drops: 7, P99: 18, Verdict: "share 30%"},
		{Dir: "down", Proto: "udp", Src: "10.0.0.1:5001", Dst: "10.0.0.2:6001", Class: "Classic ECN", Queue: "C",
			Rate: 2e6, Bytes: 1 << 18, Marks: 3, P99: 17, Verdict: "share 20%"},
	}
}

// manyFlows are n flows of falling rates.
func manyFlows(n int) []Flow {
	out := make([]Flow, n)
	classes := []string{"L4S", "Classic ECN", "Not-ECT"}
	for i := range out {
		out[i] = Flow{Dir: "down", Proto: "udp", Src: fmt.Sprintf("10.1.%d.%d:%d", i/250, i%250, 1000+i),
			Dst: "10.0.0.2:9", Class: classes[i%3], Queue: "C", Rate: float64(n - i), Bytes: uint64(i), P99: 1,
			Verdict: "share"}
	}
	return out
}
