package analyze

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/pi2hop/pi2hop/aqm"
)

// Table limits: the JSON output has everything.
const (
	tableFlows = 20
	tableBins  = 60
)

// WriteTable prints r as readable tables.
func (r *Result) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	p := func(format string, a ...any) { fmt.Fprintf(tw, format, a...) }

	p("FILE\tFORMAT\tPACKETS\tSKIPPED\tROLE\n")
	for _, f := range r.Files {
		p("%s\t%s\t%d\t%d\t%s\n", f.Path, f.Format, f.Packets, f.Skipped, dash(f.Role))
		if f.BadComments > 0 {
			p("  %d malformed pi2hop annotations ignored\t\t\t\t\n", f.BadComments)
		}
		for _, w := range f.Warnings() {
			p("  warning: %s\t\t\t\t\n", w)
		}
	}
	p("\nINTERFACE\tDIRECTION\tPOINT\tPACKETS\tCAPTURE RECEIVED\tCAPTURE DROPPED\n")
	for _, i := range r.Interfaces {
		p("%s\t%s\t%s\t%d\t%s\t%s\n", i.Name, i.Direction, i.Point, i.Packets, optCount(i.CaptureReceived), optCount(i.CaptureDropped))
	}
	for _, d := range r.Directions {
		p("\n== direction %s ==\n", d.Name)
		p("CLASS\tIN\tSENT\tSENT BYTES\tMARKED\tMARK %%\tDROPPED\tDROP %%\tSOJOURN P50/P99/MAX ms\tTRANSIT P50/P99 ms\n")
		for _, c := range d.Classes {
			p("%s\t%d\t%d\t%d\t%d\t%.2f\t%d\t%.2f\t%s\t%s\n", c.Class, c.In, c.Sent, c.SentBytes,
				c.Marked, 100*c.MarkFraction, c.Dropped, 100*c.DropFraction,
				pct3(c.Sojourn), pct2(c.Transit))
		}
		for _, c := range d.Classes {
			if len(c.MarksBy)+len(c.DropsBy) > 0 {
				p("  %s: marks %s; drops %s\n", c.Class, byReason(c.MarksBy), byReason(c.DropsBy))
			}
		}
		for i, c := range d.Classes {
			if c.MovedOut > 0 && len(d.Classes) == 2 {
				p("  %s→%s before the queue: %d packets came in as %s and were queued in %s (an ECN path fault rewrote them; the flows below say which)\n",
					c.Class, d.Classes[1-i].Class, c.MovedOut, c.Class, d.Classes[1-i].Class)
			}
		}
		cp := d.Coupling
		if cp.Defined {
			p("  coupling (k=%g): p_L %.4f  p_C %.4f  (p_L/k)² %.4f", cp.K, cp.PL, cp.PC, cp.Expected)
			if cp.ExpectedCoupled > 0 || cp.PLCoupled > 0 {
				p("  coupled-only p_L %.4f  (p_L/k)² %.4f", cp.PLCoupled, cp.ExpectedCoupled)
			}
			p("  ratio %.3f\n", cp.Ratio)
		} else {
			p("  coupling: not defined (one queue carried no packets)\n")
		}
		var tr []string
		for _, t := range d.Transitions {
			mark := ""
			if !t.Valid {
				mark = " INVALID"
			}
			tr = append(tr, fmt.Sprintf("%s→%s %d%s", t.From, t.To, t.Packets, mark))
		}
		p("  ECN transitions: %s; invalid %d\n", dash(strings.Join(tr, ", ")), d.InvalidTransitions)
		p("  IPv4 checksum errors: %s\n", byReason(d.ChecksumErrors))
		p("  matched in→out %d, unmatched in %d, unmatched out %d\n", d.Matched, d.UnmatchedIn, d.UnmatchedOut)
		writeFaults(p, d)

		p("\n  FLOW\tCLASS\tIN NotECT/ECT1/ECT0/CE\tIN BYTES\tOUT NotECT/ECT1/ECT0/CE\tOUT BYTES\tMARKED\tDROPPED\n")
		for i, f := range d.Flows {
			if i == tableFlows {
				p("  ... %d more flows (--json lists all)\n", len(d.Flows)-tableFlows)
				break
			}
			p("  %s\t%s\t%s\t%d\t%s\t%d\t%d\t%d\n", f.Flow, f.Class, ecnPackets(&f.In), f.In.Total().Bytes,
				ecnPackets(&f.Out), f.Out.Total().Bytes, f.Marked, f.Dropped)
		}
		if len(d.Bins) > tableBins {
			p("\n  %d time bins of %gms: see --json or --plot\n", len(d.Bins), r.BinMs)
			continue
		}
		p("\n  TIME s\tC SENT\tC MARK %%\tC DROP %%\tC SOJ P99 ms\tL SENT\tL MARK %%\tL DROP %%\tL SOJ P99 ms\tPROB\n")
		for _, b := range d.Bins {
			c, l := b.Classes[0], b.Classes[1]
			p("  %.3f\t%d\t%.2f\t%.2f\t%.3f\t%d\t%.2f\t%.2f\t%.3f\t%.4f\n", b.Start,
				c.Sent, 100*c.MarkFraction, 100*c.DropFraction, c.SojournP99,
				l.Sent, 100*l.MarkFraction, 100*l.DropFraction, l.SojournP99, max(c.Prob, l.Prob))
		}
	}
	writeRTT(p, r.RTT)
	return tw.Flush()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func optCount(n int64) string {
	if n < 0 {
		return "-"
	}
	return fmt.Sprint(n)
}

func pct3(p Percentiles) string {
	if p.Count == 0 {
		return "-"
	}
	return fmt.Sprintf("%.3f/%.3f/%.3f", p.P50, p.P99, p.Max)
}

func pct2(p Percentiles) string {
	if p.Count == 0 {
		return "-"
	}
	return fmt.Sprintf("%.3f/%.3f", p.P50, p.P99)
}

func byReason(m map[string]uint64) string {
	if len(m) == 0 {
		return "none"
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s=%d", k, m[k]))
	}
	return strings.Join(parts, " ")
}

func ecnPackets(c *aqm.ByECN) string {
	return fmt.Sprintf("%d/%d/%d/%d", c.NotECT.Packets, c.ECT1.Packets, c.ECT0.Packets, c.CE.Packets)
}

// writeFaults prints each flow's ECN path faults, or that there were none.
func writeFaults(p func(string, ...any), d *DirectionResult) {
	switch {
	case !d.ECNFaultsChecked:
		p("  ECN path faults: not checked (needs an in and an out capture point)\n")
		return
	case d.FaultyFlows == 0:
		p("  ECN path faults: none in %d flows\n", len(d.Flows))
		return
	}
	p("  ECN path faults in %d of %d flows:\n", d.FaultyFlows, len(d.Flows))
	for _, f := range d.Flows {
		if len(f.ECNFaults) == 0 {
			continue
		}
		var what []string
		for _, ff := range f.ECNFaults {
			what = append(what, fmt.Sprintf("%s, %d packets", ff.Text, ff.Packets))
		}
		p("    %s: %s\n", f.Flow, strings.Join(what, "; "))
	}
}
