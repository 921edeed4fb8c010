package testbed

import (
	"cmp"
	"slices"
	"time"

	"github.com/pi2hop/pi2hop/figure"
	"github.com/pi2hop/pi2hop/flow"
	"github.com/pi2hop/pi2hop/hop"
	"github.com/pi2hop/pi2hop/internal/hoststeal"
	"github.com/pi2hop/pi2hop/testbed/metrics"
	"github.com/pi2hop/pi2hop/testbed/report"
)

// A pause is a time the machine under the lab stopped running one of its
// CPUs: the host of a VM descheduled it (seen as steal), or something
// beneath the hop's owners kept the wake-up probe, a real-time thread at
// their priority pinned to each CPU, from waking on time. Every packet in
// flight through the hop then waits, whatever the queue does: on a VM
// pauses last ms, and a few of them in a run decide a call's RTT p99.

// span is a stretch of a run's time, [from, to], since its traffic started.
type span struct{ from, to time.Duration }

const (
	// stealTick is steal's unit: the counter is the nanoseconds stolen
	// from all CPUs rounded down, so a pause shows only once it crosses a
	// tick and may be up to a tick longer than the counter's growth.
	stealTick = hoststeal.Tick
	// pauseLateness is the wake-up probe's lateness that makes a
	// pause: far above the hop's own timing error at p99 in the lab
	// (docs/performance.md), and a fifth of the call's 5 ms margin.
	pauseLateness = time.Millisecond
	// probeLag is how long a probe's worst wake-up may take to reach a
	// sample: the probe reports every 20 ms (wakeprobe.ReportEvery), and a
	// pause of D ms reads as at least D - 1 ms late (it sleeps 1 ms).
	probeLag    = 20 * time.Millisecond
	probePeriod = time.Millisecond
)

// machinePauses returns the times the machine may have paused, from the
// samples' steal counter and wake-up probe: for every pair of samples
// between which steal grew by Δ (a pause of at most D = Δ + stealTick)
// or the probe woke L > pauseLateness late (D = L + its period), the
// earlier one's time less D (less probeLag for the probe) to the later
// one's plus D, the time for the queue to drain what arrived meanwhile
// (at most D's worth at the link rate, when the senders send at it).
// Overlapping spans are merged. It returns ok false when the trace has
// neither figure, so nothing can be said.
func machinePauses(s []queueSample) (spans []span, ok bool) {
	stealKnown, probeKnown := len(s) > 1, len(s) > 1
	for i, x := range s {
		stealKnown = stealKnown && x.steal >= 0
		probeKnown = probeKnown && (i == 0 || x.probeWorst >= 0)
	}
	for i := 1; i < len(s); i++ {
		a, b := s[i-1], s[i]
		var d, lead time.Duration
		if stealKnown && b.steal > a.steal {
			d = b.steal - a.steal + stealTick
			lead = d
		}
		if l := time.Duration(b.probeWorst); probeKnown && l > pauseLateness {
			d = max(d, l+probePeriod)
			lead = max(lead, l+probePeriod+probeLag)
		}
		if d == 0 {
			continue
		}
		sp := span{from: a.at - lead, to: b.at + d}
		if n := len(spans); n > 0 && sp.from <= spans[n-1].to {
			spans[n-1].to = max(spans[n-1].to, sp.to)
			continue
		}
		spans = append(spans, sp)
	}
	return spans, stealKnown || probeKnown
}

// rttOutside returns the RTT samples (ms) taken at or after from whose
// round trip, [at − rtt, at], overlaps none of spans (sorted and
// disjoint, as machinePauses returns them), and how many samples at or
// after from there were.
func rttOutside(rtt, at []time.Duration, from time.Duration, spans []span) (kept []float64, all int) {
	var out []time.Duration
	for i, r := range rtt {
		if i >= len(at) || at[i] < from {
			continue
		}
		all++
		start, end := at[i]-r, at[i]
		// The first span that ends at or after the round trip began is
		// the only one that can overlap it: the ones after it start later.
		k, _ := slices.BinarySearchFunc(spans, start, func(sp span, t time.Duration) int { return cmp.Compare(sp.to, t) })
		if k < len(spans) && spans[k].from <= end {
			continue
		}
		out = append(out, r)
	}
	return figure.Millis(out), all
}

// outsidePauses fills call's RTT figures outside the machine's pauses
// from the sender's samples and the run's hop trace (nil: unknown).
func outsidePauses(call *report.Call, send *flow.VideoSenderSummary, from time.Duration, q *queueTrace) {
	call.PausedShare = -1
	if send == nil || q == nil {
		return
	}
	spans, ok := machinePauses(q.samples)
	if !ok {
		return
	}
	kept, all := rttOutside(send.RTT, send.RTTAt, from, spans)
	call.RTTOutsidePausesMs, call.PausedShare = figure.Summarise(kept), 0
	if all > 0 {
		call.PausedShare = float64(all-len(kept)) / float64(all)
	}
}

// queuesOutsidePauses fills run's utilisation and sojourn figures outside
// the machine's pauses: over the stats intervals between samples ai and
// bi (the measured window's edges) that overlap no pause. A pause stops
// the hop or a sender, and the link idles or the packets that queued
// behind it leave in a burst, whatever the queue and the sender do; on a
// VM a few such intervals decide a utilisation or a p99. The run's
// Queues must be filled (fillQueues).
func queuesOutsidePauses(run *report.Run, s []queueSample, ai, bi int) {
	run.PausedTimeShare = -1
	spans, ok := machinePauses(s)
	if !ok || bi <= ai {
		return
	}
	var hl, hc hop.Histogram
	var bytes uint64
	var kept, all int64 // ns of the direction's clock
	k := 0              // the first span that may reach interval i
	for i := ai + 1; i <= bi; i++ {
		from, to := s[i-1].at, s[i].at
		dt := s[i].elapsed - s[i-1].elapsed
		all += dt
		for k < len(spans) && spans[k].to <= from {
			k++
		}
		if k < len(spans) && spans[k].from < to {
			continue // a pause touched (from, to]
		}
		kept += dt
		bytes += s[i].outBytes - s[i-1].outBytes
		if s[i].lSojourn != nil {
			s[i].lSojourn.addTo(&hl)
			s[i].cSojourn.addTo(&hc)
		}
	}
	if all <= 0 {
		return
	}
	run.PausedTimeShare = 1 - float64(kept)/float64(all)
	if kept > 0 && run.RateBps > 0 {
		run.UtilisationOutsidePauses = metrics.Utilisation(bytes, run.RateBps, time.Duration(kept))
	}
	for i := range run.Queues {
		h := &hc
		if run.Queues[i].Name == "L" {
			h = &hl
		}
		run.Queues[i].SojournOutsidePausesMs = histDist(h)
	}
}
