package testbed

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/flow"
	"github.com/pi2hop/pi2hop/hop"
	"github.com/pi2hop/pi2hop/testbed/report"
)

const ms1 = time.Millisecond

// videoResult fakes a 10 s call: 30 fps with one 500 ms freeze at 7 s,
// RTTs of 100 ms in the warm-up and 21..22 ms after, 100 packets per
// second with 20 % lost after the warm-up.
func videoResult() flowResult {
	var send flow.VideoSenderSummary
	for t := time.Duration(0); t < 10*time.Second; t += 10 * ms1 {
		rtt := 21*ms1 + time.Duration(t%(2*ms1))
		if t < 5*time.Second {
			rtt = 100 * ms1
		}
		send.RTT, send.RTTAt = append(send.RTT, rtt), append(send.RTTAt, t)
	}
	var recv flow.VideoReceiverSummary
	for t := time.Duration(0); t < 10*time.Second; t += 33 * ms1 {
		if t > 7*time.Second && t < 7500*ms1 {
			continue
		}
		recv.Display = append(recv.Display, t)
		recv.FrameDelay = append(recv.FrameDelay, 80*ms1)
	}
	for k := 1; k <= 10; k++ {
		iv := flow.Interval{T: float64(k), Dur: 1, Packets: 100, GoodputBps: 1e6}
		if k > 5 {
			iv.Packets, iv.LossFrac = 80, 0.2
		}
		recv.Packets += iv.Packets
		recv.Lost += int64(math.Round(iv.LossFrac / (1 - iv.LossFrac) * float64(iv.Packets)))
		recv.Intervals = append(recv.Intervals, iv)
	}
	recv.Duration = 10 * time.Second
	return flowResult{spec: FlowSpec{Label: "call", Kind: KindVideo, ECN: flow.ECNL4S}, videoSend: &send, videoRecv: &recv}
}

// fakeQueues fakes hop stats every 100 ms for 10 s: L packets of 1 ms
// sojourn and C packets of 10 ms (30 ms in the warm-up), 1 MB/s out.
func fakeQueues(from, to time.Duration) *queueTrace {
	q := newQueueTrace(from, to)
	var d hop.DirStats
	for k := 0; k <= 100; k++ {
		at := time.Duration(k) * 100 * ms1
		if k > 0 {
			cSojourn := int64(10 * ms1)
			if at <= 5*time.Second {
				cSojourn = int64(30 * ms1)
			}
			for range 10 {
				d.SojournL.Add(int64(ms1))
				d.SojournC.Add(cSojourn)
			}
			d.Queue.L.Sent += 10
			d.Queue.C.Sent += 10
			d.Queue.C.Dropped++
			d.OutBytes += 100_000
		}
		d.Elapsed = int64(at)
		q.add(queueSample{at: at, elapsed: d.Elapsed, outBytes: d.OutBytes, lq: d.Queue.L, cq: d.Queue.C}, &d)
	}
	return q
}

func TestAnalyseCall(t *testing.T) {
	sp := RunSpec{Name: "x", Title: "X", Queue: dualPI2(0), RateBps: 10_000_000, RTT: 20 * ms1,
		Duration: 10 * time.Second, Warmup: 5 * time.Second}
	res := &runResult{
		spec: sp,
		flows: []flowResult{videoResult(), {spec: FlowSpec{Label: "bulk-1", Kind: KindCubic, ECN: flow.ECNClassic},
			bulk: &flow.BulkSummary{PerSecond: []float64{1e6, 1e6, 1e6, 1e6, 1e6, 8e6, 8e6, 8e6, 8e6, 8e6}}}},
		queues: fakeQueues(window(sp)),
	}
	run := analyse(res)
	c := run.Call
	if c == nil {
		t.Fatal("no call figures")
	}
	if c.RTTMs.Max > 22 || c.RTTMs.Min < 21 || c.RTTMs.N != 500 {
		t.Errorf("call RTT %+v: the warm-up's 100 ms samples must be left out", c.RTTMs)
	}
	if math.Abs(c.Loss-0.2) > 1e-9 || c.LossMax1s != 0.2 {
		t.Errorf("loss %v, worst second %v; want 0.2 and 0.2", c.Loss, c.LossMax1s)
	}
	if c.Stalls.Count != 1 || math.Abs(c.Stalls.TotalMs-528) > 1 {
		t.Errorf("stalls %+v, want one of 528 ms", c.Stalls)
	}
	if len(c.FPS) != 5 || c.FPSAtLeast25 != 0.8 || c.FPSZero != 0 {
		t.Errorf("fps %v, ≥25 share %v, zero share %v", c.FPS, c.FPSAtLeast25, c.FPSZero)
	}
	if c.FrameDelayMs.P99 != 80 || c.GoodputBps != 1e6 {
		t.Errorf("frame delay %+v, goodput %v", c.FrameDelayMs, c.GoodputBps)
	}
	if got := run.BulkGoodput(); got != 8e6 {
		t.Errorf("bulk goodput %v, want 8e6 (after the warm-up only)", got)
	}
	if len(run.Queues) != 2 || run.Queues[0].Name != "L" || run.Queues[1].Name != "C" {
		t.Fatalf("queues %+v, want L and C", run.Queues)
	}
	l, cq := run.Queues[0], run.Queues[1]
	// Histogram buckets are 1.6 % wide: 1 ms reads as up to 1.016 ms.
	if l.SojournMs.P99 < 1 || l.SojournMs.P99 > 1.016 || cq.SojournMs.P99 < 10 || cq.SojournMs.P99 > 10.16 {
		t.Errorf("sojourn p99 L %v C %v, want about 1 and 10 ms (warm-up left out)", l.SojournMs.P99, cq.SojournMs.P99)
	}
	if math.Abs(cq.SojournMs.Mean-cq.SojournMs.P50) > 0.01 {
		t.Errorf("C mean %v, want its constant sojourn %v", cq.SojournMs.Mean, cq.SojournMs.P50)
	}
	if cq.Packets != 500 || cq.Dropped != 50 || l.Packets != 500 {
		t.Errorf("counters L %+v C %+v, want 500 packets each, 50 C drops", l, cq)
	}
	if math.Abs(run.Utilisation-0.8) > 1e-9 {
		t.Errorf("utilisation %v, want 1 MB/s of 10 Mbit/s = 0.8", run.Utilisation)
	}
	if n := len(run.Series.QueueDelayMs["C"]); n != 100 || len(run.Series.QueueT) != 100 || run.Series.QueueBinS != 0.1 {
		t.Errorf("queue series of %d points at %d times %v s apart, want 100 0.1 s apart", n, len(run.Series.QueueT), run.Series.QueueBinS)
	}
	// Point i is the bin ending at (i+1)/10 s: C 30 ms up to 5 s, 10 ms
	// after, L 1 ms throughout, each read as up to 1.6 % more.
	for i, c := range run.Series.QueueDelayMs["C"] {
		want := 10.0
		if i < 50 {
			want = 30
		}
		if l := run.Series.QueueDelayMs["L"][i]; c < want || c > want*1.016 || l < 1 || l > 1.016 {
			t.Errorf("queue delay at %v s: C %v L %v ms, want about %v and 1", run.Series.QueueT[i], c, l, want)
		}
	}
	// The plots' series cover the whole run, warm-up included: frames
	// every 33 ms give 31 in [0, 1) s (0 … 990 ms); from 5 s on the
	// windows are the call's figures'.
	if fps := run.Series.FPS; len(fps) != 10 || fps[0] != 31 || !slices.Equal(fps[5:], c.FPS) {
		t.Errorf("fps series %v, want 10 windows from 0 s, 31 frames in the first, the call's %v from 5 s", fps, c.FPS)
	}
	for label, want := range map[string][]float64{
		"call":   {1e6, 1e6, 1e6, 1e6, 1e6, 1e6, 1e6, 1e6, 1e6, 1e6},
		"bulk-1": {1e6, 1e6, 1e6, 1e6, 1e6, 8e6, 8e6, 8e6, 8e6, 8e6},
	} {
		if got := run.Series.Throughput[label]; !slices.Equal(got, want) {
			t.Errorf("%s throughput series %v, want %v", label, got, want)
		}
	}
	// The sojourn distributions are the measured time's: 500 packets a
	// queue, C all at 10 ms (its 30 ms warm-up left out).
	for q, want := range map[string]float64{"L": 1, "C": 10} {
		d := run.SojournDist[q]
		if d.N != 500 || len(d.X) == 0 || d.X[0] < want || d.X[len(d.X)-1] > want*1.016 || d.Share[len(d.Share)-1] != 1 {
			t.Errorf("%s sojourn distribution: N %d, %d points, %v..%v ms; want 500 samples all about %v ms", q, d.N, len(d.X),
				d.X[:min(1, len(d.X))], d.X[max(0, len(d.X)-1):], want)
		}
	}
	if run.Fairness != nil {
		t.Error("fairness without a Prague flow")
	}
	if sp, ok := run.Setup.(RunSpec); !ok || sp.Queue.Kind != aqm.KindDualPI2 {
		t.Errorf("setup %+v: want the RunSpec with its queue", run.Setup)
	}
}

func TestAnalyseFIFOHasOneQueue(t *testing.T) {
	sp := RunSpec{Queue: aqm.Spec{Kind: aqm.KindFIFO}, RateBps: 1e7, Duration: 10 * time.Second, Warmup: 5 * time.Second}
	res := &runResult{spec: sp, queues: fakeQueues(window(sp))}
	run := analyse(res)
	if len(run.Queues) != 1 || run.Queues[0].Name != "C" {
		t.Errorf("FIFO queues %+v, want only C", run.Queues)
	}
}

func TestFairness(t *testing.T) {
	flows := []report.Flow{
		{Label: "prague", Kind: string(KindPrague), ECN: flow.ECNL4S, GoodputBps: 6e6},
		{Label: "cubic", Kind: string(KindCubic), ECN: flow.ECNClassic, GoodputBps: 3e6},
	}
	f := fairness(flows)
	if f == nil || f.Ratio != 2 || math.Abs(f.Jain-0.9) > 1e-9 || f.L4SLabel != "prague" {
		t.Errorf("fairness %+v, want ratio 2, Jain 0.9", f)
	}
}

func TestLossAfter(t *testing.T) {
	ivs := []flow.Interval{
		{T: 1, Dur: 1, Packets: 90, LossFrac: 0.1}, // 10 lost in the warm-up
		{T: 2, Dur: 1, Packets: 0, LossFrac: 1},    // all lost, count unknown: kept
		{T: 3, Dur: 1, Packets: 50, LossFrac: 0.5},
	}
	lost, got := lossAfter(80, 140, ivs, 2*time.Second)
	if lost != 70 || got != 50 {
		t.Errorf("lossAfter = %d lost, %d received; want 70, 50", lost, got)
	}
	lost, got = lossAfter(5, 10, ivs, 10*time.Second) // more in the intervals than the totals
	if lost != 0 || got != 0 {
		t.Errorf("lossAfter clamps to 0, got %d %d", lost, got)
	}
}

// TestPerSecond: receiver intervals resampled into one-second bins of the
// run, whole seconds of the traffic time only. Bits per bin worked by hand.
func TestPerSecond(t *testing.T) {
	iv := func(end, dur, bps float64) flow.Interval { return flow.Interval{T: end, Dur: dur, GoodputBps: bps} }
	for _, tt := range []struct {
		name string
		ivs  []flow.Interval
		to   time.Duration
		want []float64
	}{
		// The receivers' drain after the senders stop: [2, 2.3) s carries
		// a few bytes and lies past the 2 s of traffic, so it is no bin.
		{"drain tail left out", []flow.Interval{iv(1, 1, 8e6), iv(2, 1, 8e6), iv(2.3, 0.3, 1e5)}, 2 * time.Second, []float64{8e6, 8e6}},
		// An interval over [0.5, 1.5) at 4 Mbit/s: half of its 4 Mbit in
		// each bin, beside [0, 0.5) at 2 Mbit/s and [1.5, 2) at 6 Mbit/s.
		{"straddling interval", []flow.Interval{iv(0.5, 0.5, 2e6), iv(1.5, 1, 4e6), iv(2, 0.5, 6e6)}, 2 * time.Second, []float64{1e6 + 2e6, 2e6 + 3e6}},
		// A partial last second of traffic is not a bin.
		{"partial last second", []flow.Interval{iv(1, 1, 8e6), iv(2, 1, 8e6)}, 1500 * time.Millisecond, []float64{8e6}},
		{"no traffic time", []flow.Interval{iv(1, 1, 8e6)}, 0, nil},
	} {
		got := perSecond(tt.ivs, tt.to)
		if len(got) != len(tt.want) {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
			continue
		}
		for k := range got {
			if math.Abs(got[k]-tt.want[k]) > 1e-6 {
				t.Errorf("%s: bin %d = %g, want %g", tt.name, k, got[k], tt.want[k])
			}
		}
	}
}

// TestHistCurve: 1000 sojourns of 1 µs .. 1000 µs. The curve's shares
// are rank/N, its values the bucket bounds of those ranks, and it ends on
// the largest sample (share 1), so the CCDF reaches 1/N.
func TestHistCurve(t *testing.T) {
	var h hop.Histogram
	for i := 1; i <= 1000; i++ {
		h.Add(int64(i) * 1000)
	}
	d := histCurve(&h)
	if d.N != 1000 || len(d.X) != len(d.Share) || len(d.X) < 400 {
		t.Fatalf("N %d, %d values, %d shares: want N 1000 and at least 400 points", d.N, len(d.X), len(d.Share))
	}
	last := len(d.X) - 1
	if d.Share[last] != 1 || d.X[last] < 1 || d.X[last] > 1.016 {
		t.Errorf("last point (%g ms, %g), want the largest sample, 1 ms within a bucket (1.6 %%), share 1", d.X[last], d.Share[last])
	}
	// Rank 999 is in the curve (20 points a decade towards the top).
	found := false
	for i := range d.Share {
		if d.Share[i] == 0.999 {
			found = d.X[i] >= 0.999 && d.X[i] <= 0.999*1.016
		}
		if i > 0 && (d.X[i] < d.X[i-1] || d.Share[i] <= d.Share[i-1]) {
			t.Fatalf("point %d (%g, %g) after (%g, %g): not ascending", i, d.X[i], d.Share[i], d.X[i-1], d.Share[i-1])
		}
	}
	if !found {
		t.Error("no point at rank 999 with a value within its bucket of 0.999 ms")
	}
}
