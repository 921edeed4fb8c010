package report

import (
	"strings"
)

// Better says which way a figure improves.
type Better int

const (
	// Neither: a setting or a count with no better direction (CE marks).
	Neither Better = iota
	Lower
	Higher
)

// Metric is one figure of a run as summary.csv and lab compare show it:
// the one list both read, so a column of the CSV and a row of the
// comparison are the same number.
type Metric struct {
	Key    string // the CSV column: "call_rtt_p99_ms"
	Name   string // the comparison's row: "call RTT p99 (ms)"
	Better Better
	// Value is the figure of run in r, false where the run has none (no
	// call, no L queue).
	Value func(r *Report, run *Run) (float64, bool)
}

func callMetric(key, name string, b Better, f func(c *Call) float64) Metric {
	return Metric{Key: "call_" + key, Name: "call " + name, Better: b, Value: func(_ *Report, run *Run) (float64, bool) {
		if run.Call == nil {
			return 0, false
		}
		return f(run.Call), true
	}}
}

// queueMetric is a figure of the named queue; sojourn figures need
// packets that waited.
func queueMetric(q, key, name string, b Better, sojourn bool, f func(q *Queue) float64) Metric {
	return Metric{Key: strings.ToLower(q) + "_" + key, Name: q + "-queue " + name, Better: b, Value: func(_ *Report, run *Run) (float64, bool) {
		qq := run.queue(q)
		if qq == nil || sojourn && qq.SojournMs.N == 0 {
			return 0, false
		}
		return f(qq), true
	}}
}

// bdpMetric is a figure of the bdp table's row measured by the run.
func bdpMetric(key, name string, b Better, f func(row *BDPRow) float64) Metric {
	return Metric{Key: "bdp_" + key, Name: "bdp " + name, Better: b, Value: func(r *Report, run *Run) (float64, bool) {
		for i := range r.BDP {
			if r.BDP[i].Run == run.Name {
				return f(&r.BDP[i]), true
			}
		}
		return 0, false
	}}
}

func runMetric(key, name string, b Better, f func(run *Run) (float64, bool)) Metric {
	return Metric{Key: key, Name: name, Better: b, Value: func(_ *Report, run *Run) (float64, bool) { return f(run) }}
}

func always(f func(run *Run) float64) func(run *Run) (float64, bool) {
	return func(run *Run) (float64, bool) { return f(run), true }
}

// Metrics are a run's figures in the order summary.csv and lab compare
// list them; flows' figures follow (flowMetrics). Rates are in Mbit/s,
// times in ms, loss and shares as fractions (0.012 is 1.2 %).
var Metrics = []Metric{
	runMetric("rate_mbit", "bottleneck rate (Mbit/s)", Neither, always(func(run *Run) float64 { return run.RateBps / 1e6 })),
	runMetric("base_rtt_ms", "base RTT (ms)", Neither, always(func(run *Run) float64 { return run.BaseRTTMs })),
	runMetric("duration_s", "traffic time (s)", Neither, always(func(run *Run) float64 { return run.DurationS })),
	runMetric("repeats", "repetitions", Neither, always(func(run *Run) float64 { return float64(max(run.Repeats, 1)) })),
	callMetric("rtt_p50_ms", "RTT p50 (ms)", Lower, func(c *Call) float64 { return c.RTTMs.P50 }),
	callMetric("rtt_p95_ms", "RTT p95 (ms)", Lower, func(c *Call) float64 { return c.RTTMs.P95 }),
	callMetric("rtt_p99_ms", "RTT p99 (ms)", Lower, func(c *Call) float64 { return c.RTTMs.P99 }),
	callMetric("rtt_max_ms", "RTT max (ms)", Lower, func(c *Call) float64 { return c.RTTMs.Max }),
	callMetric("loss", "loss", Lower, func(c *Call) float64 { return c.Loss }),
	callMetric("loss_worst_1s", "loss, worst second", Lower, func(c *Call) float64 { return c.LossMax1s }),
	callMetric("stall_rate", "stall rate", Lower, func(c *Call) float64 { return c.Stalls.Rate }),
	callMetric("stalls_per_minute", "stalls per minute", Lower, func(c *Call) float64 { return c.Stalls.PerMinute }),
	callMetric("fps_mean", "mean fps", Higher, func(c *Call) float64 { return c.FPSMean }),
	callMetric("fps_share_at_least_25", "seconds at ≥ 25 fps", Higher, func(c *Call) float64 { return c.FPSAtLeast25 }),
	callMetric("fps_share_zero", "seconds at 0 fps", Lower, func(c *Call) float64 { return c.FPSZero }),
	callMetric("frame_delay_p99_ms", "frame delay p99 (ms)", Lower, func(c *Call) float64 { return c.FrameDelayMs.P99 }),
	callMetric("goodput_mbit", "goodput (Mbit/s)", Higher, func(c *Call) float64 { return c.GoodputBps / 1e6 }),
	queueMetric("L", "sojourn_p50_ms", "delay p50 (ms)", Lower, true, func(q *Queue) float64 { return q.SojournMs.P50 }),
	queueMetric("L", "sojourn_p99_ms", "delay p99 (ms)", Lower, true, func(q *Queue) float64 { return q.SojournMs.P99 }),
	queueMetric("L", "marked", "CE marked", Neither, false, func(q *Queue) float64 { return float64(q.Marked) }),
	queueMetric("L", "dropped", "dropped", Lower, false, func(q *Queue) float64 { return float64(q.Dropped) }),
	queueMetric("C", "sojourn_p50_ms", "delay p50 (ms)", Lower, true, func(q *Queue) float64 { return q.SojournMs.P50 }),
	queueMetric("C", "sojourn_p99_ms", "delay p99 (ms)", Lower, true, func(q *Queue) float64 { return q.SojournMs.P99 }),
	queueMetric("C", "marked", "CE marked", Neither, false, func(q *Queue) float64 { return float64(q.Marked) }),
	queueMetric("C", "dropped", "dropped", Lower, false, func(q *Queue) float64 { return float64(q.Dropped) }),
	runMetric("bulk_goodput_mbit", "bulk goodput (Mbit/s)", Higher, func(run *Run) (float64, bool) {
		return run.BulkGoodput() / 1e6, run.bulkFlows() > 0
	}),
	runMetric("utilisation", "utilisation", Higher, always(func(run *Run) float64 { return run.Utilisation })),
	runMetric("rate_ratio", "L4S/classic rate ratio", Neither, func(run *Run) (float64, bool) {
		if run.Fairness == nil {
			return 0, false
		}
		return run.Fairness.Ratio, true
	}),
	runMetric("jain", "Jain fairness", Higher, func(run *Run) (float64, bool) {
		if run.Fairness == nil {
			return 0, false
		}
		return run.Fairness.Jain, true
	}),
	bdpMetric("window_bytes", "window (B)", Neither, func(b *BDPRow) float64 { return float64(b.WindowBytes) }),
	bdpMetric("predicted_mbit", "window/RTT (Mbit/s)", Neither, func(b *BDPRow) float64 { return b.PredictedBps / 1e6 }),
	bdpMetric("measured_mbit", "measured (Mbit/s)", Higher, func(b *BDPRow) float64 { return b.MeasuredBps / 1e6 }),
	// The machine's noise: not a figure of the path, so no better side.
	runMetric("hop_lateness_p99_ms", "hop timing error p99 (ms)", Neither, always(func(run *Run) float64 { return run.HopLatenessMs.P99 })),
	runMetric("host_steal_ms", "host steal (ms of CPU)", Neither, func(run *Run) (float64, bool) { return run.StealMs, run.StealMs >= 0 }),
}

func (run *Run) bulkFlows() int {
	n := 0
	for _, f := range run.Flows {
		if strings.HasPrefix(f.Kind, "tcp") {
			n++
		}
	}
	return n
}

// flowMetrics are the figures of each flow label some run of reps has,
// labels in the order they first appear.
func flowMetrics(reps ...*Report) []Metric {
	var labels []string
	seen := map[string]bool{}
	for _, r := range reps {
		for _, run := range r.Runs {
			for _, f := range run.Flows {
				if !seen[f.Label] {
					seen[f.Label] = true
					labels = append(labels, f.Label)
				}
			}
		}
	}
	var ms []Metric
	for _, l := range labels {
		ms = append(ms,
			flowMetric(l, "goodput_mbit", "goodput (Mbit/s)", Higher, func(f *Flow) (float64, bool) { return f.GoodputBps / 1e6, true }),
			flowMetric(l, "rtt_p50_ms", "RTT p50 (ms)", Lower, func(f *Flow) (float64, bool) {
				return rttOf(f, func(s *Flow) float64 { return s.RTTMs.P50 })
			}),
			flowMetric(l, "rtt_p99_ms", "RTT p99 (ms)", Lower, func(f *Flow) (float64, bool) {
				return rttOf(f, func(s *Flow) float64 { return s.RTTMs.P99 })
			}),
			flowMetric(l, "loss", "loss", Lower, func(f *Flow) (float64, bool) {
				if f.Loss == nil {
					return 0, false
				}
				return *f.Loss, true
			}))
	}
	return ms
}

func rttOf(f *Flow, p func(*Flow) float64) (float64, bool) {
	if f.RTTMs == nil || f.RTTMs.N == 0 {
		return 0, false
	}
	return p(f), true
}

// flowMetric is a figure of the flow labelled label.
func flowMetric(label, key, name string, b Better, f func(*Flow) (float64, bool)) Metric {
	return Metric{Key: "flow_" + label + "_" + key, Name: "flow " + label + " " + name, Better: b,
		Value: func(_ *Report, run *Run) (float64, bool) {
			for i := range run.Flows {
				if run.Flows[i].Label == label {
					return f(&run.Flows[i])
				}
			}
			return 0, false
		}}
}

// present keeps the metrics that some run of reps has.
func present(ms []Metric, reps ...*Report) []Metric {
	var out []Metric
	for _, m := range ms {
	has:
		for _, r := range reps {
			for i := range r.Runs {
				if _, ok := m.Value(r, &r.Runs[i]); ok {
					out = append(out, m)
					break has
				}
			}
		}
	}
	return out
}

// allMetrics are the figures some run of reps has: Metrics, then flows'.
func allMetrics(reps ...*Report) []Metric {
	return present(append(append([]Metric(nil), Metrics...), flowMetrics(reps...)...), reps...)
}
