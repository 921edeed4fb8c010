package report

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Tables returns the report's tables in the order report.md shows them.
// Which tables appear follows from the data: a call table when a run has
// a video call, a fairness table when one compares flows, and so on.
func (r *Report) Tables() []Table {
	var ts []Table
	if t, ok := r.callTable(); ok {
		ts = append(ts, t)
	}
	if r.Comparison != nil {
		ts = append(ts, *r.Comparison)
	}
	if t, ok := r.fairnessTable(); ok {
		ts = append(ts, t)
	}
	if len(r.BDP) > 0 {
		ts = append(ts, r.bdpTable())
	}
	ts = append(ts, r.flowTable(), r.queueTable())
	if len(r.Checks) > 0 {
		ts = append(ts, r.checkTable())
	}
	return append(ts, r.spreadTables()...)
}

// Summary returns the tables worth printing on the terminal at the end of
// a lab: the scenario's headline table and the checks.
func (r *Report) Summary() []Table {
	var ts []Table
	switch {
	case len(r.BDP) > 0:
		ts = append(ts, r.bdpTable())
	default:
		if t, ok := r.callTable(); ok {
			ts = append(ts, t)
		}
		if r.Comparison != nil {
			ts = append(ts, *r.Comparison)
		}
		if t, ok := r.fairnessTable(); ok {
			ts = append(ts, t, r.queueTable())
		}
	}
	if len(ts) == 0 {
		ts = append(ts, r.flowTable())
		// Its utilisation, queue delays and the machine's noise are what
		// a run of one flow is judged on.
		if t := r.queueTable(); len(t.Rows) > 0 {
			ts = append(ts, t)
		}
	}
	if len(r.Checks) > 0 {
		ts = append(ts, r.checkTable())
	}
	return ts
}

func ms(x float64) string { return fmt.Sprintf("%.1f", x) }

func pct(x float64) string { return fmt.Sprintf("%.1f %%", 100*x) }

func mbit(bps float64) string { return fmt.Sprintf("%.2f", bps/1e6) }

func ratio(x float64) string {
	if math.IsInf(x, 0) || math.IsNaN(x) {
		return "∞"
	}
	return fmt.Sprintf("%.2f", x)
}

// queue returns the named queue of a run, or nil.
func (run *Run) queue(name string) *Queue {
	for i := range run.Queues {
		if run.Queues[i].Name == name {
			return &run.Queues[i]
		}
	}
	return nil
}

// BulkGoodput sums the goodput of the run's kernel TCP flows.
func (run *Run) BulkGoodput() float64 {
	var sum float64
	for _, f := range run.Flows {
		if strings.HasPrefix(f.Kind, "tcp") {
			sum += f.GoodputBps
		}
	}
	return sum
}

func (r *Report) callTable() (Table, bool) {
	if r.Scenario == "ecn-faults" {
		// A column per run would be some twenty columns wide.
		return r.ecnFaultTable(), true
	}
	var runs []*Run
	for i := range r.Runs {
		if r.Runs[i].Call != nil {
			runs = append(runs, &r.Runs[i])
		}
	}
	if len(runs) == 0 {
		return Table{}, false
	}
	t := Table{Title: "Video call", Header: []string{"metric"}}
	for _, run := range runs {
		t.Header = append(t.Header, run.Title)
	}
	row := func(name string, f func(run *Run) string) {
		cells := []string{name}
		for _, run := range runs {
			cells = append(cells, f(run))
		}
		t.Rows = append(t.Rows, cells)
	}
	row("RTT p50 (ms)", func(run *Run) string { return ms(run.Call.RTTMs.P50) })
	row("RTT p95 (ms)", func(run *Run) string { return ms(run.Call.RTTMs.P95) })
	row("RTT p99 (ms)", func(run *Run) string { return ms(run.Call.RTTMs.P99) })
	row("RTT max (ms)", func(run *Run) string { return ms(run.Call.RTTMs.Max) })
	row("RTT p99 outside machine pauses (ms)", func(run *Run) string { return outsidePauses(run.Call) })
	row("loss", func(run *Run) string { return pct(run.Call.Loss) })
	row("loss, worst second", func(run *Run) string { return pct(run.Call.LossMax1s) })
	row("stall rate", func(run *Run) string { return pct(run.Call.Stalls.Rate) })
	row("stalls per minute", func(run *Run) string { return fmt.Sprintf("%.1f", run.Call.Stalls.PerMinute) })
	row("seconds at ≥ 25 fps", func(run *Run) string { return pct(run.Call.FPSAtLeast25) })
	row("seconds at 0 fps", func(run *Run) string { return pct(run.Call.FPSZero) })
	row("mean fps", func(run *Run) string { return fmt.Sprintf("%.1f", run.Call.FPSMean) })
	row("frame delay p99 (ms)", func(run *Run) string { return ms(run.Call.FrameDelayMs.P99) })
	row("call goodput (Mbit/s)", func(run *Run) string { return mbit(run.Call.GoodputBps) })
	for _, q := range []string{"L", "C"} {
		row(q+"-queue delay p99 (ms)", func(run *Run) string {
			if qq := run.queue(q); qq != nil && qq.SojournMs.N > 0 {
				return ms(qq.SojournMs.P99)
			}
			return "–"
		})
	}
	row("bulk goodput (Mbit/s)", func(run *Run) string { return mbit(run.BulkGoodput()) })
	row("utilisation", func(run *Run) string { return pct(run.Utilisation) })
	row("hop timing error p99 / worst (ms)", func(run *Run) string {
		return fmt.Sprintf("%.2f / %.1f", run.HopLatenessMs.P99, run.HopWorstMs)
	})
	row("machine floor, worst wake-up (ms)", func(run *Run) string { return probeMs(run) })
	row("host steal (ms of CPU)", func(run *Run) string { return stealMs(run) })
	return t, true
}

func (r *Report) fairnessTable() (Table, bool) {
	t := Table{Title: "Coexistence", Header: []string{"run", "L4S flow", "classic flow", "L4S (Mbit/s)", "classic (Mbit/s)", "rate ratio", "Jain", "L p99 (ms)", "C p99 (ms)"}}
	for i := range r.Runs {
		run := &r.Runs[i]
		f := run.Fairness
		if f == nil {
			continue
		}
		rate := func(label string) float64 {
			for _, fl := range run.Flows {
				if fl.Label == label {
					return fl.GoodputBps
				}
			}
			return 0
		}
		p99 := func(q string) string {
			if qq := run.queue(q); qq != nil {
				return ms(qq.SojournMs.P99)
			}
			return "–"
		}
		t.Rows = append(t.Rows, []string{run.Title, f.L4SLabel, f.ClassicLabel,
			mbit(rate(f.L4SLabel)), mbit(rate(f.ClassicLabel)), ratio(f.Ratio), fmt.Sprintf("%.3f", f.Jain), p99("L"), p99("C")})
	}
	return t, len(t.Rows) > 0
}

func (r *Report) bdpTable() Table {
	t := Table{Title: "Window-limited TCP (throughput ≤ window / RTT)",
		Header: []string{"distance", "RTT (ms)", "window (B)", "link (Mbit/s)", "predicted (Mbit/s)", "measured (Mbit/s)", "error"}}
	for _, b := range r.BDP {
		t.Rows = append(t.Rows, []string{fmt.Sprintf("%d km", b.DistanceKm), ms(b.RTTMs), fmt.Sprintf("%d", b.WindowBytes),
			mbit(b.LinkBps), mbit(b.PredictedBps), mbit(b.MeasuredBps), pct(b.RelErr)})
	}
	return t
}

func (r *Report) flowTable() Table {
	t := Table{Title: "Flows", Header: []string{"run", "flow", "kind", "ECN", "goodput (Mbit/s)", "RTT p50 (ms)", "RTT p99 (ms)", "loss"}}
	for _, run := range r.Runs {
		for _, f := range run.Flows {
			p50, p99, loss := "–", "–", "–"
			if f.RTTMs != nil && f.RTTMs.N > 0 {
				p50, p99 = ms(f.RTTMs.P50), ms(f.RTTMs.P99)
			}
			if f.Loss != nil {
				loss = pct(*f.Loss)
			}
			t.Rows = append(t.Rows, []string{run.Title, f.Label, f.Kind, f.ECN, mbit(f.GoodputBps), p50, p99, loss})
		}
	}
	return t
}

func (r *Report) queueTable() Table {
	t := Table{Title: "Bottleneck queues (server→client; sojourn = dequeue − enqueue)",
		Header: []string{"run", "queue", "p50 (ms)", "p99 (ms)", "max (ms)", "packets", "CE marked", "dropped", "utilisation", "hop timing error p99 (ms)", "hop worst (ms)", "machine floor worst (ms)", "host steal (ms)"}}
	for _, run := range r.Runs {
		for _, q := range run.Queues {
			t.Rows = append(t.Rows, []string{run.Title, q.Name, ms(q.SojournMs.P50), ms(q.SojournMs.P99), ms(q.SojournMs.Max),
				fmt.Sprint(q.Packets), fmt.Sprint(q.Marked), fmt.Sprint(q.Dropped), pct(run.Utilisation), fmt.Sprintf("%.2f", run.HopLatenessMs.P99),
				fmt.Sprintf("%.1f", run.HopWorstMs), probeMs(&run), stealMs(&run)})
		}
	}
	return t
}

func (r *Report) checkTable() Table {
	t := Table{Title: "Checks", Header: []string{"check", "result", "detail"}}
	failed := false
	for _, c := range r.Checks {
		res := "FAIL"
		if c.Pass {
			res = "pass"
		}
		failed = failed || !c.Pass
		t.Rows = append(t.Rows, []string{c.Name, res, c.Detail})
	}
	single := !slices.ContainsFunc(r.Runs, func(run Run) bool { return run.Repeats > 1 })
	if failed && single {
		t.Notes = append(t.Notes, "Judged on one run of each kind: on a shared or virtual machine one noisy minute "+
			"(see the machine floor and host steal) can decide a percentile. --repeat 3 judges the checks on the "+
			"medians of three interleaved runs.")
	}
	return t
}

// probeMs is the wake-up probe's worst wake-up of a run, marked when the
// probe could not run real-time (then it bounds nothing for the owners).
func probeMs(run *Run) string {
	switch {
	case run.ProbeWorstMs < 0:
		return "–"
	case !run.ProbeRealTime:
		return fmt.Sprintf("%.1f (not real-time)", run.ProbeWorstMs)
	}
	return fmt.Sprintf("%.1f", run.ProbeWorstMs)
}

// outsidePauses is the call's RTT p99 over the round trips the machine
// did not pause, with the share left out.
func outsidePauses(c *Call) string {
	switch {
	case c.PausedShare < 0:
		return "–"
	case c.PausedShare == 0:
		return ms(c.RTTMs.P99) + " (none left out)"
	case c.RTTOutsidePausesMs.N == 0:
		return "– (all left out)"
	}
	return fmt.Sprintf("%s (%.0f %% left out)", ms(c.RTTOutsidePausesMs.P99), 100*c.PausedShare)
}

// stealMs is the CPU time the host took from the machine during a run.
func stealMs(run *Run) string {
	if run.StealMs < 0 {
		return "–"
	}
	return fmt.Sprintf("%.0f", run.StealMs)
}

// spreadTables are, for lab --repeat N, one table per run with every
// figure's median and min-max over the N repetitions (the other tables
// show the medians).
func (r *Report) spreadTables() []Table {
	var ts []Table
	for _, run := range r.Runs {
		if run.Repeats < 2 {
			continue
		}
		t := Table{Title: fmt.Sprintf("%s: %d repetitions (plots from repetition %d, the closest to the medians)", run.Title, run.Repeats, run.MedianRun),
			Header: []string{"figure (report.json path)", "median", "min", "max"}}
		paths := make([]string, 0, len(run.Spread))
		for p := range run.Spread {
			paths = append(paths, p)
		}
		slices.Sort(paths)
		for _, p := range paths {
			s := run.Spread[p]
			t.Rows = append(t.Rows, []string{p, num(s.Median), num(s.Min), num(s.Max)})
		}
		ts = append(ts, t)
	}
	return ts
}

// num prints a figure of any size with 4 significant digits.
func num(x float64) string { return strconv.FormatFloat(x, 'g', 4, 64) }

// ecnFaultTable sets each ECN fault's effect on the call side by side,
// one row per run: what validation found, what the call sent at the end,
// its experience, and the queues it met.
func (r *Report) ecnFaultTable() Table {
	t := Table{Title: "ECN path faults: the call's validation, experience and queues",
		Header: []string{"run", "fault", "validation", "call sends", "RTT p50 (ms)", "RTT p99 (ms)", "loss", "stalls per minute",
			"mean fps", "L p99 (ms)", "L marked", "L dropped", "C p99 (ms)", "C dropped", "RTT rise without CE (ms)"}}
	for i := range r.Runs {
		run := &r.Runs[i]
		c := run.Call
		if c == nil {
			continue
		}
		fault := run.ECNFault
		if fault == "" {
			fault = "none"
		}
		sends := "ECT(1)"
		if c.FellBack {
			sends = "Not-ECT, loss-only"
		} else if c.ECN != "l4s" {
			sends = "Not-ECT"
		}
		p50, p99 := ms(c.RTTMs.P50), ms(c.RTTMs.P99)
		if c.RTTMs.N == 0 {
			sends += ", nothing acknowledged"
			p50, p99 = "–", "–"
		}
		l, cq := run.queue("L"), run.queue("C")
		t.Rows = append(t.Rows, []string{run.Title, fault, validationCell(c), sends,
			p50, p99, pct(c.Loss), fmt.Sprintf("%.1f", c.Stalls.PerMinute), fmt.Sprintf("%.1f", c.FPSMean),
			queueP99Cell(l), queueCount(l, func(q *Queue) uint64 { return q.Marked }), queueCount(l, func(q *Queue) uint64 { return q.Dropped }),
			queueP99Cell(cq), queueCount(cq, func(q *Queue) uint64 { return q.Dropped }), ms(c.RTTRiseNoCEMs)})
	}
	t.Notes = append(t.Notes, "validation: \"failed: REASON at T s\" when the call detected the fault (T since the call started), "+
		"\"off\" for the naive call that keeps ECT(1) whatever the path does. L and C are the bottleneck's queues, server to client.")
	return t
}

func validationCell(c *Call) string {
	switch {
	case c.ECNValidation == "failed":
		return fmt.Sprintf("failed: %s at %.2f s", c.ECNFailReason, c.ECNFailS)
	case c.ECNValidation == "":
		return "–"
	}
	return c.ECNValidation
}

func queueP99Cell(q *Queue) string {
	if q == nil || q.SojournMs.N == 0 {
		return "–"
	}
	return ms(q.SojournMs.P99)
}

func queueCount(q *Queue, f func(*Queue) uint64) string {
	if q == nil {
		return "–"
	}
	return fmt.Sprint(f(q))
}
