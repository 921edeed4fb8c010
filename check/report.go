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

// Why says in one line why the path is not L4S-ready ("" when it is).
func (r *Result) Why() string {
	var why []string
	for _, d := range []struct {
		name string
		d    Direction
	}{{ForwardName, r.Forward}, {ReverseName, r.Reverse}} {
		if d.d.Verdict.Kind != Passes {
			why = append(why, fmt.Sprintf("%s: %s (%s)", d.name, d.d.Verdict.Kind, d.d.Verdict.Faults[0].Detail))
		}
	}
	return strings.Join(why, "; ")
}

// WriteText prints the result as a person reads it.
func (r *Result) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "check %v: %d probes per codepoint each way, round trip %.2f ms\n", r.Peer, r.Probes, figure.Ms(r.RTT))
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
	if r.Ready() {
		b.WriteString("\nL4S-ready: yes, ECN passes both ways\n")
	} else {
		fmt.Fprintf(&b, "\nL4S-ready: no, %s\n", r.Why())
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
	return JSON{Target: r.Target, Peer: r.Peer.String(), Probes: r.Probes, RTTMs: figure.Ms(r.RTT),
		Ready: r.Ready(), Why: r.Why(), Forward: dir(r.Forward), Reverse: dir(r.Reverse)}
}
