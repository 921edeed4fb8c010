package report

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/pi2hop/pi2hop/figure"
)

// Range is one metric of a run over its repetitions: the median (nearest
// rank, figure.Rank: always one of the values) and the smallest and largest.
type Range struct {
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
}

// Combine merges the N repetitions of one run (lab --repeat N) into the
// run the report shows: every figure is the median of the N, Spread gives
// each figure's median and min-max by its path in report.json
// ("call.rtt_ms.p99", "flows[bulk-1].goodput_bps"), and the time series,
// raw samples and setup (so the plots) are those of the median run, the
// repetition closest to the medians over all figures. One repetition is
// returned as it is.
func Combine(reps []Run) (Run, error) {
	if len(reps) == 1 {
		return reps[0], nil
	}
	trees := make([]map[string]any, len(reps))
	vals := map[string][]float64{}
	for i := range reps {
		t, err := tree(&reps[i])
		if err != nil {
			return Run{}, err
		}
		trees[i] = t
		walk("", t, func(path string, v float64) float64 {
			vals[path] = append(vals[path], v)
			return v
		})
	}
	spread := make(map[string]Range, len(vals))
	for path, xs := range vals {
		s := slices.Clone(xs)
		slices.Sort(s)
		spread[path] = Range{Median: figure.Quantile(s, 0.5), Min: s[0], Max: s[len(s)-1]}
	}
	m := medianRun(trees, spread)
	walk("", trees[m], func(path string, _ float64) float64 { return spread[path].Median })
	b, err := json.Marshal(trees[m])
	if err != nil {
		return Run{}, err
	}
	var out Run
	if err := json.Unmarshal(b, &out); err != nil {
		return Run{}, fmt.Errorf("report: combining repetitions: %w", err)
	}
	base := reps[m]
	out.Setup, out.Series, out.RTTMs, out.SojournDist = base.Setup, base.Series, base.RTTMs, base.SojournDist
	out.Repeats, out.MedianRun, out.Spread = len(reps), m+1, spread
	var errs []string
	for i, r := range reps {
		if r.Error != "" {
			errs = append(errs, fmt.Sprintf("repetition %d: %s", i+1, r.Error))
		}
	}
	out.Error = strings.Join(errs, "; ")
	return out, nil
}

// tree is r as report.json has it, without the time series and setup,
// which are not figures.
func tree(r *Run) (map[string]any, error) {
	b, err := json.Marshal(r)
	if err != nil {
		return nil, err
	}
	var t map[string]any
	if err := json.Unmarshal(b, &t); err != nil {
		return nil, err
	}
	delete(t, "series")
	delete(t, "setup")
	delete(t, "spread")
	return t, nil
}

// walk calls f on every number of t by path and stores what f returns:
// objects by key, lists of objects by their label or name (else their
// index); lists of plain numbers are per-second series, not figures, and
// are left alone.
func walk(path string, t map[string]any, f func(string, float64) float64) {
	keys := make([]string, 0, len(t))
	for k := range t {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		p := k
		if path != "" {
			p = path + "." + k
		}
		switch v := t[k].(type) {
		case float64:
			t[k] = f(p, v)
		case map[string]any:
			walk(p, v, f)
		case []any:
			for i, e := range v {
				if o, ok := e.(map[string]any); ok {
					walk(fmt.Sprintf("%s[%s]", p, itemName(o, i)), o, f)
				}
			}
		}
	}
}

func itemName(o map[string]any, i int) string {
	for _, k := range []string{"label", "name"} {
		if s, ok := o[k].(string); ok && s != "" {
			return s
		}
	}
	return fmt.Sprint(i)
}

// medianRun is the repetition closest to the medians: the least sum, over
// the figures that vary, of its distance to the median as a share of the
// figure's range; the first of equals.
func medianRun(trees []map[string]any, spread map[string]Range) int {
	best, bestScore := 0, math.Inf(1)
	for i, t := range trees {
		var score float64
		walk("", t, func(path string, v float64) float64 {
			if r := spread[path]; r.Max > r.Min {
				score += math.Abs(v-r.Median) / (r.Max - r.Min)
			}
			return v
		})
		if score < bestScore {
			best, bestScore = i, score
		}
	}
	return best
}
