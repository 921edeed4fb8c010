package hop

import (
	"math"
	"testing"
	"time"

	"github.com/pi2hop/pi2hop/aqm"
)

// The figures of one direction: totals since the start, rates over the
// interval since the previous snapshot when one is given.
func TestStatsRowIntervalAndTotals(t *testing.T) {
	var s DirStats
	s.Dir = Down
	s.Kind = aqm.KindDualPI2
	s.Delay = int64(10 * time.Millisecond)
	s.Elapsed = int64(time.Second)
	s.Link.Busy = int64(500 * time.Millisecond)
	s.Queue.Prob = aqm.MaxProb / 4
	s.Queue.DelayC = 1_500_000
	s.OutBytes = 625_000
	s.In, s.CPU = 1000, int64(2*time.Millisecond)
	s.QueueDrops[aqm.ReasonClassic] = 5
	s.NoBuffer = 2
	for i := 0; i < 100; i++ {
		s.SojournL.Add(int64(i) * 10_000)
	}
	prev := s
	s.Elapsed += int64(time.Second)
	s.OutBytes += 1_250_000 // 10 Mbit in the second second
	s.In += 500
	s.CPU += int64(time.Millisecond)

	v := s.Row(&prev)
	// The link was idle in the interval; 1 ms of CPU over 500 packets is 2 µs each.
	if v.Interval != 1 || v.OutBps != 10e6 || v.Utilisation != 0 || v.CPUPerPkt != 2 || v.SojournL[1] != 0 {
		t.Errorf("interval: %v s, %v bit/s, utilisation %v, cpu %v µs/pkt, sojourn L %v; want 1, 10e6, 0, 2, none",
			v.Interval, v.OutBps, v.Utilisation, v.CPUPerPkt, v.SojournL)
	}
	v = s.Row(nil)
	// 1875000 bytes in 2 s; busy 0.5 of 2 s; p99 of 0, 10, ... 990 µs is
	// 980 µs, in the bucket whose upper edge the histogram reports.
	if v.Interval != 2 || v.OutBps != 7.5e6 || v.Utilisation != 0.25 || v.Utilisation != s.Utilisation() {
		t.Errorf("whole run: %v s, %v bit/s, utilisation %v; want 2, 7.5e6, 0.25", v.Interval, v.OutBps, v.Utilisation)
	}
	if v.Dir != "down" || math.Abs(v.Prob-0.25) > 1e-9 || v.DelayCus != 1500 || v.Delay != "10ms" || v.Drops["classic"] != 5 || v.Drops["nobuffer"] != 2 {
		t.Errorf("row %+v", v)
	}
	if want := float64(s.SojournL.Quantile(0.99)) / 1e6; v.SojournL[1] != want || want < 0.98 {
		t.Errorf("sojourn L p99 %v ms, want %v (>= 0.98)", v.SojournL[1], want)
	}
}
