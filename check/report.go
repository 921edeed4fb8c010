package check

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/pi2hop/pi2hop/figure"
)

// The direction names in reports.
const (
	ForwardName = "client → responder"
	ReverseName = "responder → client"
)

// Why says in one line why the path is not L4S-ready ("" when it is),
// each verdict with the figures behind it.
func (r *Result) Why() string { return r.why(true) }

// why is Why, with each verdict's detail (full) or its name alone, for
// the last line of a text that printed the details above it.
func (r *Result) why(full bool) string {
	var why []string
	for _, d := range []struct {
		name string
		d    Direction
	}{{ForwardName, r.Forward}, {ReverseName, r.Reverse}} {
		if d.d.Verdict.Kind == Passes {
			continue
		}
		w := fmt.Sprintf("%s: %s", d.name, d.d.Verdict.Kind)
		if full {
			w += " (" + d.d.Verdict.Faults[0].Detail + ")"
		}
		why = append(why, w)
	}
	if r.Load != nil && !r.Load.Verdict.Ready() {
		w := "bottleneck " + r.Load.Verdict.Kind
		if full {
			w = "bottleneck: " + r.Load.Verdict.Headline()
		}
		why = append(why, w)
	}
	return strings.Join(why, "; ")
}

// WriteText prints the result as a person reads it.
func (r *Result) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "check %v: %d probes per codepoint each way; idle RTT %.2f ms (their median round trip, before any load)\n", r.Peer, r.Probes, figure.Ms(r.RTT))
	for _, d := range []struct {
		name, ttlWhere string
		d              Direction
	}{{ForwardName, "at the responder", r.Forward}, {ReverseName, "here", r.Reverse}} {
		fmt.Fprintf(&b, "\n%s: %s\n", d.name, d.d.Verdict.Kind)
		tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  sent\tlost\tarrived as")
		t := d.d.Table
		for _, s := range order {
			var as []string
			for _, a := range order {
				if n := t.Arrived[s][a]; n > 0 {
					as = append(as, fmt.Sprintf("%v %d", a, n))
				}
			}
			if len(as) == 0 {
				as = []string{"-"}
			}
			fmt.Fprintf(tw, "  %v\t%d/%d\t%s\n", s, t.Lost(s), t.Sent[s], strings.Join(as, ", "))
		}
		tw.Flush()
		for _, f := range d.d.Verdict.Faults {
			if f.Kind == d.d.Verdict.Kind {
				fmt.Fprintf(&b, "  %s\n", f.Detail)
			} else {
				fmt.Fprintf(&b, "  also %s: %s\n", f.Kind, f.Detail)
			}
		}
		if t.TTLMin > 0 {
			ttl := fmt.Sprint(t.TTLMin)
			if t.TTLMax != t.TTLMin {
				ttl = fmt.Sprintf("%d-%d", t.TTLMin, t.TTLMax)
			}
			fmt.Fprintf(&b, "  TTL %s: %s\n", d.ttlWhere, ttl)
		}
		if d.d.Partial {
			b.WriteString("  (the responder's own count never came back: losses are round trips)\n")
		}
	}
	if l := r.Load; l != nil {
		l.writeText(&b)
	}
	switch {
	case r.Ready() && r.Load != nil:
		b.WriteString("\nL4S-ready: yes, ECN passes both ways and the bottleneck is an L4S dual-queue AQM\n")
	case r.Ready():
		b.WriteString("\nL4S-ready: yes, ECN passes both ways\n")
	default:
		fmt.Fprintf(&b, "\nL4S-ready: no, %s (above)\n", r.why(false))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// JSON is the result as `pi2hop check --json` prints it.
type JSON struct {
	Target  string        `json:"target"`
	Peer    string        `json:"peer"`
	Probes  int           `json:"probes_per_codepoint"`
	RTTMs   float64       `json:"rtt_ms"`
	Ready   bool          `json:"ready"`
	Why     string        `json:"why,omitempty"`
	Forward DirectionJSON `json:"forward"`
	Reverse DirectionJSON `json:"reverse"`
	Trace   *TraceJSON    `json:"trace,omitempty"` // with --trace
	Load    *LoadJSON     `json:"load,omitempty"`  // with --load
}

// LoadJSON is the load test in JSON.
type LoadJSON struct {
	Verdict    string       `json:"verdict"`
	Detail     string       `json:"detail"`
	Ready      bool         `json:"ready"`
	DurationS  float64      `json:"duration_s"`
	MaxRateBps uint64       `json:"max_rate_bps"`
	BaseRTTMs  float64      `json:"base_rtt_ms"`
	L4S        LoadFlowJSON `json:"l4s"`
	Classic    LoadFlowJSON `json:"classic"`
	GoodputBps float64      `json:"goodput_bps"`
	QueueMs    float64      `json:"queue_ms"`
	PathFaults []string     `json:"path_faults"` // changes of the ECN field during the load
}

// LoadFlowJSON is one class of the load: its flow and its RTT probe.
type LoadFlowJSON struct {
	GoodputBps float64 `json:"goodput_bps"`
	CEFrac     float64 `json:"ce_frac"`
	LossFrac   float64 `json:"loss_frac"`
	RTTs       int     `json:"rtt_samples"`
	RTTP50Ms   float64 `json:"rtt_p50_ms"`
	RTTP99Ms   float64 `json:"rtt_p99_ms"`
	// Arrived is the flow's data packets at the responder by codepoint
	// (nil when it did not say); ProbesThere and ProbesBack the probe's
	// replies by the codepoint the probe arrived with and the reply came
	// back with.
	Arrived     map[string]int `json:"arrived,omitempty"`
	ProbesThere map[string]int `json:"probes_arrived"`
	ProbesBack  map[string]int `json:"replies_arrived"`
}

// byName is counts indexed by aqm.ECN as a map by codepoint name.
func byName(counts [4]int) map[string]int {
	m := map[string]int{}
	for _, c := range order {
		m[c.String()] = counts[c]
	}
	return m
}

// JSON returns the load test's JSON form.
func (l *Load) JSON() LoadJSON {
	f := l.Figures
	j := LoadJSON{Verdict: l.Verdict.Kind, Detail: l.Verdict.Detail, Ready: l.Verdict.Ready(),
		DurationS: l.Duration.Seconds(), MaxRateBps: l.MaxRate, BaseRTTMs: figure.Ms(f.Base),
		GoodputBps: f.L4SGoodput + f.CGoodput, QueueMs: figure.Ms(max(f.ClassicP99, f.L4SP99) - f.Base),
		PathFaults: append([]string{}, l.Verdict.PathFaults...),
		L4S: LoadFlowJSON{GoodputBps: f.L4SGoodput, CEFrac: f.L4SCE, LossFrac: f.L4SLoss,
			RTTs: f.L4SProbes, RTTP50Ms: figure.Ms(f.L4SP50), RTTP99Ms: figure.Ms(f.L4SP99),
			ProbesThere: byName(f.ProbesThere[0]), ProbesBack: byName(f.ProbesBack[0])},
		Classic: LoadFlowJSON{GoodputBps: f.CGoodput, LossFrac: f.ClassicLoss,
			RTTs: f.ClassicProbes, RTTP50Ms: figure.Ms(f.ClassicP50), RTTP99Ms: figure.Ms(f.ClassicP99),
			ProbesThere: byName(f.ProbesThere[1]), ProbesBack: byName(f.ProbesBack[1])}}
	if f.ArrivedKnown {
		j.L4S.Arrived, j.Classic.Arrived = byName(f.Arrived[0]), byName(f.Arrived[1])
	}
	return j
}

// writeText prints the load test's lines.
func (l *Load) writeText(b *strings.Builder) {
	f := l.Figures
	fmt.Fprintf(b, "\nbottleneck: %s\n", l.Verdict.Headline())
	if l.Verdict.Kind == NotMeasured && f.L4SProbes+f.ClassicProbes == 0 && f.L4SGoodput+f.CGoodput == 0 {
		return
	}
	fmt.Fprintf(b, "  load %v under %.1f Mbit/s\n", l.Duration, float64(l.MaxRate)/1e6)
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  flow\tMbit/s\tCE\tloss\tRTT p50\tRTT p99")
	fmt.Fprintf(tw, "  L4S (ECT(1))\t%.2f\t%.1f %%\t%.1f %%\t%.2f ms\t%.2f ms\n", f.L4SGoodput/1e6, 100*f.L4SCE, 100*f.L4SLoss, figure.Ms(f.L4SP50), figure.Ms(f.L4SP99))
	fmt.Fprintf(tw, "  classic (Not-ECT)\t%.2f\t-\t%.1f %%\t%.2f ms\t%.2f ms\n", f.CGoodput/1e6, 100*f.ClassicLoss, figure.Ms(f.ClassicP50), figure.Ms(f.ClassicP99))
	tw.Flush()
	if l.Verdict.Kind != ChangedUnderLoad {
		for _, pf := range l.Verdict.PathFaults {
			fmt.Fprintf(b, "  %s\n", pf)
		}
	}
}

// DirectionJSON is one direction in JSON.
type DirectionJSON struct {
	Verdict    string          `json:"verdict"`
	Faults     []Fault         `json:"faults"`
	Codepoints []CodepointJSON `json:"codepoints"`
	TTLMin     int             `json:"ttl_min,omitempty"`
	TTLMax     int             `json:"ttl_max,omitempty"`
	Partial    bool            `json:"partial,omitempty"`
}

// CodepointJSON is the train of one codepoint.
type CodepointJSON struct {
	Sent    string         `json:"sent"`
	Probes  int            `json:"probes"`
	Lost    int            `json:"lost"`
	Arrived map[string]int `json:"arrived"` // by codepoint name, all four present
}

// JSON returns the result's JSON form.
func (r *Result) JSON() JSON {
	dir := func(d Direction) DirectionJSON {
		j := DirectionJSON{Verdict: d.Verdict.Kind, Faults: d.Verdict.Faults, TTLMin: d.Table.TTLMin, TTLMax: d.Table.TTLMax, Partial: d.Partial}
		if j.Faults == nil {
			j.Faults = []Fault{}
		}
		for _, s := range order {
			c := CodepointJSON{Sent: s.String(), Probes: d.Table.Sent[s], Lost: d.Table.Lost(s), Arrived: map[string]int{}}
			for _, a := range order {
				c.Arrived[a.String()] = d.Table.Arrived[s][a]
			}
			j.Codepoints = append(j.Codepoints, c)
		}
		return j
	}
	j := JSON{Target: r.Target, Peer: r.Peer.String(), Probes: r.Probes, RTTMs: figure.Ms(r.RTT),
		Ready: r.Ready(), Why: r.Why(), Forward: dir(r.Forward), Reverse: dir(r.Reverse)}
	if r.Load != nil {
		l := r.Load.JSON()
		j.Load = &l
	}
	return j
}
