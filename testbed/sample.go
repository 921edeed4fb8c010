package testbed

import (
	"math"
	"time"

	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/figure"
	"github.com/pi2hop/pi2hop/hop"
	"github.com/pi2hop/pi2hop/internal/hoststeal"
	"github.com/pi2hop/pi2hop/topology"
)

// queueSample is what the lab keeps of every hop stats snapshot of the
// server→client direction: cumulative counters, so that any two samples
// give the counts of the time between them, and the median sojourns of
// the packets forwarded since the previous sample. Its full histograms
// are kept only where the analysis needs them (queueTrace): 49 KB a
// snapshot and one snapshot every samplePoll, kept for every sample they
// grew a run's heap by 2.5 MB a second of --duration. Of the interval's
// sojourns it keeps the non-empty buckets, 8 bytes each: one per packet
// at most, so the trace grows by bytes per packet forwarded, not by
// kilobytes per sample.
type queueSample struct {
	at       time.Duration // since the run's traffic started
	elapsed  int64         // the direction's clock, ns
	outBytes uint64        // bytes written out (dequeued and delivered)
	lq, cq   aqm.ClassCounters
	// The worst lateness of the owners (either direction) and the worst
	// wake-up of the wake-up probes since the previous sample, ns
	// (probeWorst -1: no probe); measured values, see hop.Worst.
	worst, probeWorst int64
	probeRT           bool
	steal             time.Duration // hoststeal.Total when the sample was taken
	// Median sojourn of the L and C packets forwarded since the previous
	// sample (bucket upper edge capped at the measured maximum,
	// hop.Histogram.Quantile), ns; 0 in the
	// first sample and when none were.
	lMedian, cMedian int64
	// The same packets' sojourn histograms, their non-empty buckets only,
	// so that the figures of the intervals no machine pause touched can be
	// summed (queuesOutsidePauses); nil in the first sample.
	lSojourn, cSojourn *sparseHist
}

// sparseHist is an interval's hop.Histogram kept as its non-empty
// buckets: a stats interval forwards tens to thousands of packets into a
// few dozen of the 2 048 buckets.
type sparseHist struct {
	buckets []bucketCount
	worst   int64 // the interval's largest value, ns (hop.Histogram.Sub)
}

type bucketCount struct {
	i uint16 // index in hop.Histogram.Counts
	n uint32
}

func sparseOf(h *hop.Histogram) *sparseHist {
	sp := &sparseHist{worst: h.Worst.Max}
	for i, n := range h.Counts {
		// A stats interval is ms long: no bucket counts 2^32 packets in it.
		if n > 0 {
			sp.buckets = append(sp.buckets, bucketCount{i: uint16(i), n: uint32(n)})
		}
	}
	return sp
}

// addTo adds the interval's counts to h, and its largest value to h's.
func (sp *sparseHist) addTo(h *hop.Histogram) {
	for _, b := range sp.buckets {
		h.Counts[b.i] += uint64(b.n)
		h.Total += uint64(b.n)
	}
	h.Worst.Max = max(h.Worst.Max, sp.worst)
}

func sampleOf(d *hop.DirStats, at time.Duration) queueSample {
	return queueSample{at: at, elapsed: d.Elapsed, outBytes: d.OutBytes,
		lq: d.Queue.L, cq: d.Queue.C, probeWorst: -1, steal: hoststeal.Total()}
}

// queueHists are a snapshot's cumulative histograms.
type queueHists struct {
	l, c hop.Histogram // sojourn of forwarded packets per queue, ns
	late hop.Histogram // how late the owner handled link events, ns
}

// queueTrace is what the lab keeps of a run's hop stats: every sample,
// and the histograms of at most three of them: for each edge of the
// run's window [from, to) the first sample taken at or after it, and the
// latest sample, which stands for an edge no sample reached and gives
// the next sample its medians. So a run's memory grows by one
// queueSample (~150 B) a sample, not by three histograms.
type queueTrace struct {
	samples  []queueSample
	from, to traceEdge
	last     queueHists
}

// traceEdge is the first sample taken at or after t, once there is one.
type traceEdge struct {
	t     time.Duration
	seen  bool
	i     int // index in samples
	hists queueHists
}

func newQueueTrace(from, to time.Duration) *queueTrace {
	return &queueTrace{from: traceEdge{t: from}, to: traceEdge{t: to}}
}

// add appends sample x of snapshot d, taken after every earlier one.
func (q *queueTrace) add(x queueSample, d *hop.DirStats) {
	if len(q.samples) > 0 {
		l, c := d.SojournL.Sub(&q.last.l), d.SojournC.Sub(&q.last.c)
		x.lMedian, x.cMedian = l.Quantile(0.5), c.Quantile(0.5)
		x.lSojourn, x.cSojourn = sparseOf(&l), sparseOf(&c)
	}
	q.last = queueHists{l: d.SojournL, c: d.SojournC, late: d.Lateness}
	for _, e := range []*traceEdge{&q.from, &q.to} {
		if !e.seen && x.at >= e.t {
			e.seen, e.i, e.hists = true, len(q.samples), q.last
		}
	}
	q.samples = append(q.samples, x)
}

// edge returns the first sample taken at or after e.t, or the last one,
// with its histograms and its index. The trace must hold a sample.
func (q *queueTrace) edge(e *traceEdge) (queueSample, *queueHists, int) {
	if e.seen {
		return q.samples[e.i], &e.hists, e.i
	}
	return q.samples[len(q.samples)-1], &q.last, len(q.samples) - 1
}

// worsts fills s's worst figures from snapshot cur against prev.
func (s *queueSample) worsts(cur, prev *hop.Snapshot) {
	up, _ := cur.Up.Worst.Since(&prev.Up.Worst)
	down, _ := cur.Down.Worst.Since(&prev.Down.Worst)
	s.worst = max(up, down)
	if cur.WakeProbe.Running || cur.WakeProbe.Wakes > 0 {
		s.probeWorst, _ = cur.WakeProbe.Worst.Since(&prev.WakeProbe.Worst)
		s.probeRT = cur.WakeProbe.RealTime
	}
}

// worstIn returns the worst owner lateness and the wake-up probe's worst
// wake-up (ns; probeWorst -1 without a probe) of the samples taken after from up to to, and whether
// the probe ran real-time throughout.
func worstIn(s []queueSample, from, to time.Duration) (worst, probeWorst int64, rt bool) {
	probeWorst, rt = -1, true
	for _, x := range s {
		if x.at <= from || x.at > to {
			continue
		}
		worst = max(worst, x.worst)
		if x.probeWorst >= 0 {
			probeWorst = max(probeWorst, x.probeWorst)
			rt = rt && x.probeRT
		}
	}
	return worst, probeWorst, rt && probeWorst >= 0
}

// worstPerSecond bins the samples' worst figures by the second of their
// time (window k covers (k, k+1] s), in ms.
func worstPerSecond(s []queueSample) (hopMs, probeMs []float64) {
	for _, x := range s {
		if x.at <= 0 {
			continue
		}
		k := int((x.at - 1) / time.Second)
		for len(hopMs) <= k {
			hopMs, probeMs = append(hopMs, 0), append(probeMs, -1)
		}
		hopMs[k] = max(hopMs[k], figure.Ms(time.Duration(x.worst)))
		if x.probeWorst >= 0 {
			probeMs[k] = max(probeMs[k], figure.Ms(time.Duration(x.probeWorst)))
		}
	}
	return hopMs, probeMs
}

// histDist summarises a sojourn histogram in ms. Quantiles are bucket
// upper edges (within 1.6 %); the mean integrates the quantile function
// over 200 steps, to the same precision.
func histDist(h *hop.Histogram) figure.Summary {
	if h.Total == 0 {
		return figure.Summary{}
	}
	ms := func(q float64) float64 { return figure.Ms(time.Duration(h.Quantile(q))) }
	const steps = 200
	var sum float64
	for i := range steps {
		sum += ms((float64(i) + 0.5) / steps)
	}
	return figure.Summary{N: int(h.Total), Min: ms(0), Mean: sum / steps,
		P50: ms(0.50), P95: ms(0.95), P99: ms(0.99), Max: ms(1)}
}

// histCurve is a sojourn histogram's distribution as the plots draw it,
// in ms: the bucket bound of the sample of each of figure.CurveRanks.
func histCurve(h *hop.Histogram) figure.Dist {
	return figure.Curve(int(min(h.Total, math.MaxInt)), func(q float64) float64 {
		return figure.Ms(time.Duration(h.Quantile(q)))
	})
}

func sub(a, b aqm.ClassCounters) aqm.ClassCounters {
	return aqm.ClassCounters{Enqueued: a.Enqueued - b.Enqueued, Sent: a.Sent - b.Sent, Bytes: a.Bytes - b.Bytes,
		Marked: a.Marked - b.Marked, Dropped: a.Dropped - b.Dropped}
}

// sampler polls the hop's stats while a run's traffic flows.
type sampler struct {
	done    chan struct{}
	stopped chan struct{}
	trace   *queueTrace
}

// samplePoll is how often the sampler asks; the hop publishes new
// figures every hop.DefaultStatsInterval, and repeats are skipped.
const samplePoll = 20 * time.Millisecond

// startSampler starts sampling; from and to are the run's window (see
// window), whose edges' histograms the trace keeps.
func startSampler(pair *topology.Pair, from, to time.Duration) *sampler {
	s := &sampler{done: make(chan struct{}), stopped: make(chan struct{}), trace: newQueueTrace(from, to)}
	first := pair.Hop.Stats()
	start, seq := first.Down.Elapsed, first.Down.Seq
	s.trace.add(sampleOf(&first.Down, 0), &first.Down)
	prev := first
	go func() {
		defer close(s.stopped)
		t := time.NewTicker(samplePoll)
		defer t.Stop()
		for {
			select {
			case <-s.done:
				return
			case <-t.C:
				snap := pair.Hop.Stats()
				if snap.Down.Seq != seq {
					seq = snap.Down.Seq
					x := sampleOf(&snap.Down, time.Duration(snap.Down.Elapsed-start))
					x.worsts(&snap, &prev)
					s.trace.add(x, &snap.Down)
					prev = snap
				}
			}
		}
	}()
	return s
}

func (s *sampler) stop() *queueTrace {
	close(s.done)
	<-s.stopped
	return s.trace
}
