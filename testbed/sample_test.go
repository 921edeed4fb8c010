package testbed

import (
	"math/rand/v2"
	"reflect"
	"testing"
	"time"
	"unsafe"

	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/hop"
	"github.com/pi2hop/pi2hop/testbed/report"
)

func TestWorstIn(t *testing.T) {
	s := []queueSample{
		{at: 0, probeWorst: -1},
		{at: 500 * time.Millisecond, worst: 7e6, probeWorst: 2e6, probeRT: true},
		{at: 1200 * time.Millisecond, worst: 1e6, probeWorst: 9e6, probeRT: true},
		{at: 2000 * time.Millisecond, worst: 3e6, probeWorst: 1e6, probeRT: true},
	}
	w, f, rt := worstIn(s, 500*time.Millisecond, 2*time.Second)
	if w != 3e6 || f != 9e6 || !rt {
		t.Errorf("worstIn(0.5s, 2s] = %d, %d, %v; want 3e6, 9e6, true", w, f, rt)
	}
	hop, probeWorst := worstPerSecond(s)
	if len(hop) != 2 || hop[0] != 7 || hop[1] != 3 || probeWorst[0] != 2 || probeWorst[1] != 9 {
		t.Errorf("worstPerSecond = %v, %v; want [7 3], [2 9]", hop, probeWorst)
	}
	if _, f, rt := worstIn(s[:1], -1, time.Second); f != -1 || rt {
		t.Errorf("without a probe: probeWorst %d, realtime %v; want -1, false", f, rt)
	}
}

// fullSample is a snapshot as the lab kept every one before queueTrace:
// its small figures and all three histograms.
type fullSample struct {
	queueSample
	h queueHists
}

// fullSampleAt returns the first sample taken at or after t, or the last
// one: how the lab picked the window's edges from the full list.
func fullSampleAt(s []fullSample, t time.Duration) fullSample {
	for _, x := range s {
		if x.at >= t {
			return x
		}
	}
	return s[len(s)-1]
}

// analyseQueuesFull is analyseQueues as it was over the full list of
// samples, the reference the streaming trace must agree with: the same
// figures from the window's edges and the per-sample medians, both taken
// from every sample's histograms.
func analyseQueuesFull(run *report.Run, kind string, s []fullSample, from, to time.Duration) {
	small := make([]queueSample, len(s))
	for i := range s {
		small[i] = s[i].queueSample
	}
	a, b := fullSampleAt(s, from), fullSampleAt(s, to)
	fillQueues(run, kind, small, a.queueSample, b.queueSample, &a.h, &b.h, func(i int, l bool) int64 {
		cur, prev := &s[i].h.c, &s[i-1].h.c
		if l {
			cur, prev = &s[i].h.l, &s[i-1].h.l
		}
		d := cur.Sub(prev)
		return d.Quantile(0.5)
	})
}

// synthSamples makes n seeded snapshots, about 100 ms apart (a few ms
// late each, so that round times fall between samples): sojourns,
// lateness and counters that change from bin to bin, bins with no L
// packet, worst figures with and without a wake-up probe.
func synthSamples(n int) []fullSample {
	rng := rand.New(rand.NewPCG(1, 2))
	var s []fullSample
	var cur fullSample
	for k := range n {
		cur.at = time.Duration(k) * 100 * ms1
		if k > 0 {
			cur.at += time.Duration(rng.Int64N(int64(3 * ms1)))
			for range rng.IntN(20) {
				cur.h.l.Add(rng.Int64N(int64(3*ms1)) + int64(k)*1000)
			}
			for range 5 + rng.IntN(20) {
				cur.h.c.Add(int64(5*ms1) + rng.Int64N(int64(35*ms1)))
			}
			for range 50 + rng.IntN(50) {
				cur.h.late.Add(rng.Int64N(200_000))
			}
			for _, cc := range []*aqm.ClassCounters{&cur.lq, &cur.cq} {
				sent := uint64(rng.IntN(30))
				cc.Enqueued += sent + 1
				cc.Sent += sent
				cc.Bytes += sent * 1500
				cc.Marked += uint64(rng.IntN(int(sent) + 1))
				cc.Dropped += uint64(rng.IntN(3))
			}
			cur.outBytes += uint64(rng.IntN(200_000))
			cur.worst = rng.Int64N(int64(5 * ms1))
			cur.probeWorst, cur.probeRT = -1, false
			if k > 10 {
				cur.probeWorst, cur.probeRT = rng.Int64N(int64(2*ms1)), rng.IntN(10) > 0
			}
			cur.steal += time.Duration(rng.Int64N(int64(ms1)))
		}
		cur.elapsed = 7e9 + int64(cur.at) // the hop's clock, not the run's
		s = append(s, cur)
	}
	return s
}

// TestQueueTraceMatchesFullList: the figures from the streaming trace are
// those the full list of samples gave, exactly, wherever the window's
// edges fall.
func TestQueueTraceMatchesFullList(t *testing.T) {
	s := synthSamples(106) // 0 to 10.5 s
	tests := []struct {
		name     string
		n        int // samples of s used
		from, to time.Duration
		kind     string
	}{
		{"edges between samples", 106, 5 * time.Second, 10 * time.Second, aqm.KindDualPI2},
		{"edges on samples", 106, s[30].at, s[80].at, aqm.KindDualPI2},
		{"no warm-up", 106, 0, 10 * time.Second, aqm.KindDualPI2},
		{"end after the last sample", 106, 5 * time.Second, 20 * time.Second, aqm.KindDualPI2},
		{"warm-up after the last sample", 106, 15 * time.Second, 20 * time.Second, aqm.KindDualPI2},
		{"FIFO", 106, 5 * time.Second, 10 * time.Second, aqm.KindFIFO},
		{"first sample only", 1, 5 * time.Second, 10 * time.Second, aqm.KindDualPI2},
		{"two samples", 2, 5 * time.Second, 10 * time.Second, aqm.KindDualPI2},
	}
	for _, tt := range tests {
		full := report.Run{RateBps: 10e6}
		analyseQueuesFull(&full, tt.kind, s[:tt.n], tt.from, tt.to)
		q := newQueueTrace(tt.from, tt.to)
		for _, x := range s[:tt.n] {
			d := hop.DirStats{SojournL: x.h.l, SojournC: x.h.c, Lateness: x.h.late}
			q.add(x.queueSample, &d)
		}
		streamed := report.Run{RateBps: 10e6}
		analyseQueues(&streamed, tt.kind, q)
		if reflect.DeepEqual(streamed, full) {
			continue
		}
		for _, f := range []struct {
			name     string
			got, old any
		}{
			{"queues", streamed.Queues, full.Queues},
			{"lateness", streamed.HopLatenessMs, full.HopLatenessMs},
			{"utilisation", streamed.Utilisation, full.Utilisation},
			{"worst", []any{streamed.HopWorstMs, streamed.ProbeWorstMs, streamed.ProbeRealTime, streamed.StealMs},
				[]any{full.HopWorstMs, full.ProbeWorstMs, full.ProbeRealTime, full.StealMs}},
			{"series", streamed.Series, full.Series},
		} {
			if !reflect.DeepEqual(f.got, f.old) {
				t.Errorf("%s: %s %+v, the full list gave %+v", tt.name, f.name, f.got, f.old)
			}
		}
	}
	// The cases must not be vacuous: the edges move the figures.
	a, b := report.Run{RateBps: 10e6}, report.Run{RateBps: 10e6}
	analyseQueuesFull(&a, aqm.KindDualPI2, s, 5*time.Second, 10*time.Second)
	analyseQueuesFull(&b, aqm.KindDualPI2, s, 0, 10*time.Second)
	if a.Utilisation == 0 || a.Utilisation == b.Utilisation || reflect.DeepEqual(a.Queues, b.Queues) {
		t.Errorf("utilisation %v and %v, queues %+v and %+v: want figures that depend on the window",
			a.Utilisation, b.Utilisation, a.Queues, b.Queues)
	}
}

// TestQueueTraceEdge: an edge is the first sample taken at or after it,
// or the last sample when none was, with that sample's histograms.
func TestQueueTraceEdge(t *testing.T) {
	tests := []struct {
		t    time.Duration
		want int // index of the sample, at i×100 ms with i+1 L packets
	}{
		{-time.Second, 0}, {0, 0}, {ms1, 1}, {100 * ms1, 1}, {150 * ms1, 2}, {200 * ms1, 2}, {201 * ms1, 2}, {time.Hour, 2},
	}
	for _, tt := range tests {
		q := newQueueTrace(tt.t, tt.t)
		var d hop.DirStats
		for i := range 3 {
			d.SojournL.Add(int64(ms1))
			q.add(queueSample{at: time.Duration(i) * 100 * ms1}, &d)
		}
		for _, e := range []*traceEdge{&q.from, &q.to} {
			x, h, _ := q.edge(e)
			if x.at != time.Duration(tt.want)*100*ms1 || h.l.Total != uint64(tt.want+1) {
				t.Errorf("edge at %v: sample at %v with %d L packets, want %v with %d",
					tt.t, x.at, h.l.Total, time.Duration(tt.want)*100*ms1, tt.want+1)
			}
		}
	}
}

// TestQueueSampleIsSmall: a sample holds no histogram (16 KB each), so a
// run's samples grow by bytes per stats interval, not kilobytes.
func TestQueueSampleIsSmall(t *testing.T) {
	if n := unsafe.Sizeof(queueSample{}); n > 256 {
		t.Errorf("queueSample is %d bytes, want at most 256", n)
	}
}
