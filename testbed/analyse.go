package testbed

import (
	"math"
	"time"

	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/figure"
	"github.com/pi2hop/pi2hop/flow"
	"github.com/pi2hop/pi2hop/testbed/metrics"
	"github.com/pi2hop/pi2hop/testbed/report"
)

// flowResult is what one flow's endpoints returned; which fields are set
// depends on the kind.
type flowResult struct {
	spec       FlowSpec
	videoSend  *flow.VideoSenderSummary
	videoRecv  *flow.VideoReceiverSummary
	pragueSend *flow.SenderSummary
	pragueRecv *flow.ReceiverSummary
	bulk       *flow.BulkSummary
}

// runResult is everything a run measured, before analysis.
type runResult struct {
	spec   RunSpec
	flows  []flowResult
	queues *queueTrace // server→client hop stats, every sample the sampler took
}

// window is the part of a run every figure covers, [from, to) of
// flow-relative time; the sampler is told it, to keep the histograms of
// its edges.
func window(sp RunSpec) (from, to time.Duration) { return sp.Warmup, sp.Duration }

// analyse turns a run's raw results into its report entry. Every figure
// covers [Warmup, Duration) of the run (flow-relative time).
func analyse(res *runResult) report.Run {
	sp := res.spec
	run := report.Run{
		Name: sp.Name, Title: sp.Title, AQM: sp.Queue.Kind, Buffer: sp.Buffer,
		RateBps: float64(sp.RateBps), BaseRTTMs: figure.Ms(sp.RTT), ECNFault: sp.ECNFault,
		DurationS: sp.Duration.Seconds(), WarmupS: sp.Warmup.Seconds(), Setup: sp,
		RTTMs:  map[string][]float64{},
		Series: report.Series{Throughput: map[string][]float64{}},
	}
	from, to := window(sp)
	for _, fr := range res.flows {
		f := report.Flow{Label: fr.spec.Label, Kind: string(fr.spec.Kind), ECN: fr.spec.ECN}
		switch {
		case fr.videoRecv != nil:
			call := analyseCall(fr, from, to)
			outsidePauses(&call, fr.videoSend, from, res.queues)
			run.Call = &call
			// The plot shows the whole run, the warm-up shaded.
			run.Series.FPS = metrics.FramesPerSecond(fr.videoRecv.Display, 0, callEnd(fr.videoRecv, from, to))
			f.GoodputBps, f.RTTMs, f.Loss = call.GoodputBps, &call.RTTMs, &call.Loss
			run.Series.Throughput[f.Label] = perSecond(fr.videoRecv.Intervals, to)
			if fr.videoSend != nil {
				run.RTTMs[f.Label] = rttAfter(fr.videoSend.RTT, fr.videoSend.RTTAt, from)
			}
		case fr.pragueRecv != nil:
			rc := fr.pragueRecv
			f.GoodputBps = meanGoodput(rc.Intervals, from)
			lost, got := lossAfter(rc.Lost, rc.Packets, rc.Intervals, from)
			loss := metrics.LossRate(lost+got, got)
			f.Loss = &loss
			run.Series.Throughput[f.Label] = perSecond(rc.Intervals, to)
			if fr.pragueSend != nil {
				rtts := rttAfter(fr.pragueSend.RTT, fr.pragueSend.RTTAt, from)
				d := figure.Summarise(rtts)
				f.RTTMs = &d
				run.RTTMs[f.Label] = rtts
			}
		case fr.bulk != nil:
			ps := fr.bulk.PerSecond
			f.GoodputBps = meanFrom(ps, int(from/time.Second))
			// Whole seconds of the traffic time only (BulkFetch counts
			// none beyond its duration; this bounds a late one).
			run.Series.Throughput[f.Label] = ps[:min(len(ps), int(to/time.Second))]
		}
		run.Flows = append(run.Flows, f)
	}
	if res.queues != nil && len(res.queues.samples) > 0 {
		analyseQueues(&run, sp.Queue.Kind, res.queues)
	}
	run.Fairness = fairness(run.Flows)
	return run
}

func analyseCall(fr flowResult, from, to time.Duration) report.Call {
	rc := fr.videoRecv
	call := report.Call{Label: fr.spec.Label, ECN: fr.spec.ECN}
	if fr.videoSend != nil {
		call.RTTMs = figure.Summarise(rttAfter(fr.videoSend.RTT, fr.videoSend.RTTAt, from))
		v := fr.videoSend.Validation
		call.ECNValidation, call.ECNFailReason, call.FellBack = v.State, v.Failed, fr.videoSend.FellBack
		if v.Failed != "" {
			call.ECNFailS = v.At.Seconds()
		}
		call.RTTRiseNoCEMs = figure.Ms(v.RTTRiseNoCE)
	}
	lost, got := lossAfter(rc.Lost, rc.Packets, rc.Intervals, from)
	call.Loss = metrics.LossRate(lost+got, got)
	for _, iv := range rc.Intervals {
		if ivStart(iv) >= from {
			call.LossMax1s = max(call.LossMax1s, iv.LossFrac)
		}
	}
	to = callEnd(rc, from, to)
	const fps = 30
	call.Stalls = metrics.FindStalls(rc.Display, from, to, time.Second/fps)
	call.FPS = metrics.FramesPerSecond(rc.Display, from, to)
	call.FPSAtLeast25, call.FPSZero = figure.FPSShares(call.FPS, 25)
	var frames int
	for _, n := range call.FPS {
		frames += n
	}
	if len(call.FPS) > 0 {
		call.FPSMean = float64(frames) / float64(len(call.FPS))
	}
	var delays []time.Duration
	for i, t := range rc.Display {
		if t >= from && t < to && i < len(rc.FrameDelay) {
			delays = append(delays, rc.FrameDelay[i])
		}
	}
	call.FrameDelayMs = figure.Summarise(figure.Millis(delays))
	call.GoodputBps = meanGoodput(rc.Intervals, from)
	return call
}

// callEnd is the end of the call's window [from, to): the receiver's clock
// starts at its first packet, a few ms after the run's, so its own
// duration bounds the window when it is the shorter.
func callEnd(rc *flow.VideoReceiverSummary, from, to time.Duration) time.Duration {
	if rc.Duration > from && rc.Duration < to {
		return rc.Duration
	}
	return to
}

// rttAfter returns the RTT samples (ms) taken at or after from.
func rttAfter(rtt, at []time.Duration, from time.Duration) []float64 {
	var out []time.Duration
	for i, r := range rtt {
		if i < len(at) && at[i] >= from {
			out = append(out, r)
		}
	}
	return figure.Millis(out)
}

func ivStart(iv flow.Interval) time.Duration {
	return time.Duration((iv.T - iv.Dur) * float64(time.Second))
}

// lossAfter returns the packets lost and received after from: the
// receiver's totals less what its intervals say happened before from.
// An interval reports received packets and the lost fraction
// lost/(received+lost), from which its lost count follows.
func lossAfter(totalLost, totalGot int64, ivs []flow.Interval, from time.Duration) (lost, got uint64) {
	var wl, wg float64
	for _, iv := range ivs {
		if ivStart(iv) >= from {
			break
		}
		wg += float64(iv.Packets)
		if iv.LossFrac < 1 {
			wl += iv.LossFrac / (1 - iv.LossFrac) * float64(iv.Packets)
		}
	}
	l := float64(totalLost) - wl
	g := float64(totalGot) - wg
	return uint64(max(0, l+0.5)), uint64(max(0, g))
}

// meanGoodput is the time-weighted mean goodput of the intervals that
// start at or after from.
func meanGoodput(ivs []flow.Interval, from time.Duration) float64 {
	var bits, secs float64
	for _, iv := range ivs {
		if ivStart(iv) >= from-time.Millisecond {
			bits += iv.GoodputBps * iv.Dur
			secs += iv.Dur
		}
	}
	if secs == 0 {
		return 0
	}
	return bits / secs
}

// perSecond resamples the intervals' goodput into one-second bins of the
// flow's time, bin k covering [k, k+1) s, for the throughput plots. An
// interval's bytes are spread evenly over its span. Only the whole
// seconds before to are kept: the receivers listen on for a moment after
// the senders stop (drainTime), and an interval that ends in that idle
// tail would read as a collapse of the goodput at the end.
func perSecond(ivs []flow.Interval, to time.Duration) []float64 {
	n := int(to / time.Second)
	if n <= 0 {
		return nil
	}
	bits := make([]float64, n)
	for _, iv := range ivs {
		if iv.Dur <= 0 {
			continue
		}
		start, end := iv.T-iv.Dur, iv.T
		rate := iv.GoodputBps // bit/s over [start, end)
		for k := max(0, int(math.Floor(start))); k < n && float64(k) < end; k++ {
			overlap := min(end, float64(k+1)) - max(start, float64(k))
			if overlap > 0 {
				bits[k] += rate * overlap
			}
		}
	}
	return bits
}

func meanFrom(xs []float64, k int) float64 {
	if k >= len(xs) {
		return 0
	}
	var s float64
	for _, x := range xs[k:] {
		s += x
	}
	return s / float64(len(xs)-k)
}

// analyseQueues fills run's hop figures from q (at least one sample):
// counts and histograms between the samples at the window's edges, and
// the series of every sample.
func analyseQueues(run *report.Run, kind string, q *queueTrace) {
	s := q.samples
	a, ah, ai := q.edge(&q.from)
	b, bh, bi := q.edge(&q.to)
	fillQueues(run, kind, s, a, b, ah, bh, func(i int, l bool) int64 {
		if l {
			return s[i].lMedian
		}
		return s[i].cMedian
	})
	queuesOutsidePauses(run, s, ai, bi)
}

// fillQueues fills run's hop figures from the samples s: counts and
// histograms between a and b, the samples at the window's edges, with
// their histograms ah and bh; and the series of every sample, in which
// median(i, l) is the median sojourn of the packets the L queue (l) or the
// C queue forwarded between samples i-1 and i, ns.
func fillQueues(run *report.Run, kind string, s []queueSample, a, b queueSample, ah, bh *queueHists, median func(i int, l bool) int64) {
	if b.elapsed > a.elapsed && run.RateBps > 0 {
		run.Utilisation = metrics.Utilisation(b.outBytes-a.outBytes, run.RateBps, time.Duration(b.elapsed-a.elapsed))
	}
	late := bh.late.Sub(&ah.late)
	run.HopLatenessMs = histDist(&late)
	worst, probeWorst, rt := worstIn(s, a.at, b.at)
	run.HopWorstMs, run.ProbeWorstMs, run.ProbeRealTime = figure.Ms(time.Duration(worst)), -1, rt
	if probeWorst >= 0 {
		run.ProbeWorstMs = figure.Ms(time.Duration(probeWorst))
	}
	run.StealMs = -1
	if a.steal >= 0 && b.steal >= a.steal {
		run.StealMs = figure.Ms(b.steal - a.steal)
	}
	run.Series.HopWorstMs, run.Series.ProbeWorstMs = worstPerSecond(s)
	queues := []string{"L", "C"}
	if kind == aqm.KindFIFO {
		queues = []string{"C"} // a FIFO sorts nothing: all is Classic
	}
	run.Series.QueueBinS = meanSpacing(s).Seconds()
	run.Series.QueueDelayMs = map[string][]float64{}
	for i := 1; i < len(s); i++ {
		run.Series.QueueT = append(run.Series.QueueT, s[i].at.Seconds())
	}
	for _, name := range queues {
		hb, ha := &bh.c, &ah.c
		cb, ca := b.cq, a.cq
		if name == "L" {
			hb, ha, cb, ca = &bh.l, &ah.l, b.lq, a.lq
		}
		h := hb.Sub(ha)
		c := sub(cb, ca)
		run.Queues = append(run.Queues, report.Queue{Name: name, SojournMs: histDist(&h),
			Packets: c.Sent, Marked: c.Marked, Dropped: c.Dropped})
		if h.Total > 0 {
			if run.SojournDist == nil {
				run.SojournDist = map[string]figure.Dist{}
			}
			run.SojournDist[name] = histCurve(&h)
		}
		// The time series: median sojourn of the packets forwarded in each bin.
		var series []float64
		for i := 1; i < len(s); i++ {
			series = append(series, figure.Ms(time.Duration(median(i, name == "L"))))
		}
		run.Series.QueueDelayMs[name] = series
	}
}

// meanSpacing is the mean time between the samples, the queue-delay
// series' resolution: the sampler asks every samplePoll, and each ask
// makes the owners publish (hop.Hop.Stats), so it is about that, not the
// hop's own hop.DefaultStatsInterval.
func meanSpacing(s []queueSample) time.Duration {
	if len(s) < 2 {
		return 0
	}
	return (s[len(s)-1].at - s[0].at) / time.Duration(len(s)-1)
}

// fairness compares the first L4S bulk flow with the first classic one,
// when a run has both (coexist).
func fairness(flows []report.Flow) *report.Fairness {
	var l, c *report.Flow
	for i := range flows {
		f := &flows[i]
		switch {
		case l == nil && f.Kind == string(KindPrague) && f.ECN == flow.ECNL4S:
			l = f
		case c == nil && f.Kind == string(KindCubic):
			c = f
		}
	}
	if l == nil || c == nil {
		return nil
	}
	return &report.Fairness{L4SLabel: l.Label, ClassicLabel: c.Label,
		Ratio: metrics.RateRatio(l.GoodputBps, c.GoodputBps),
		Jain:  metrics.Jain([]float64{l.GoodputBps, c.GoodputBps})}
}
