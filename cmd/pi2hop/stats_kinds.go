package main

import (
	"fmt"
	"io"
	"time"

	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/hop"
)

// writeXStats prints them as tc -s qdisc does for each qdisc (docsis:
// dualpi2's lines, then queue protection's).
func writeXStats(w io.Writer, v *hop.View) {
	usd := func(us int64) string { return (time.Duration(us) * time.Microsecond).String() }
	switch {
	case v.CoDel != nil:
		x := v.CoDel
		fmt.Fprintf(w, "  count %d lastcount %d ldelay %s", x.Count, x.LastCount, usd(x.LDelayUs))
		if x.Dropping {
			fmt.Fprintf(w, " dropping drop_next %s", usd(x.DropNextUs))
		}
		fmt.Fprintf(w, "\n  maxpacket %d ecn_mark %d drop_overlimit %d", x.MaxPacket, x.ECNMark, x.DropOverlimit)
		if x.CEMark > 0 {
			fmt.Fprintf(w, " ce_mark %d", x.CEMark)
		}
		fmt.Fprintln(w)
	case v.PIE != nil:
		x := v.PIE
		fmt.Fprintf(w, "  prob %g delay %s", x.Prob, usd(x.DelayUs))
		if x.AvgDQRate > 0 {
			fmt.Fprintf(w, " avg_dq_rate %d", x.AvgDQRate)
		}
		fmt.Fprintf(w, "\n  pkts_in %d overlimit %d dropped %d maxq %d ecn_mark %d\n", x.PktsIn, x.Overlimit, x.Dropped, x.MaxQ, x.ECNMark)
	case v.FQCodel != nil:
		x := v.FQCodel
		fmt.Fprintf(w, "  maxpacket %d drop_overlimit %d new_flow_count %d ecn_mark %d", x.MaxPacket, x.DropOverlimit, x.NewFlowCount, x.ECNMark)
		if x.CEMark > 0 {
			fmt.Fprintf(w, " ce_mark %d", x.CEMark)
		}
		fmt.Fprintf(w, " memory_used %d drop_overmemory %d\n", x.MemoryUsed, x.DropOvermemory)
		fmt.Fprintf(w, "  new_flows_len %d old_flows_len %d\n", x.NewFlowsLen, x.OldFlowsLen)
	case v.QProt != nil:
		x := v.QProt
		fmt.Fprintf(w, "  prob %f delay_c %dus delay_l %dus\n", v.Prob, v.DelayCus, v.DelayLus)
		fmt.Fprintf(w, "  pkts_in_c %d pkts_in_l %d maxq %d ecn_mark %d\n", v.PktsInC, v.PktsInL, v.MaxQ, v.ECNMark)
		fmt.Fprintf(w, "  queue protection: sanctioned_packets %d sanctioned_flows %d default_bucket %d\n",
			x.SanctionedPackets, x.SanctionedFlows, x.DefaultBucket)
	}
}

// dropReasons are the drop reasons a kind can give, in print order, then
// the hop's own.
func dropReasons(kind string) []string {
	var r []string
	switch kind {
	case aqm.KindDualPI2:
		r = []string{"classic", "coupled", "step", "overload", "limit"}
	case aqm.KindCoDel, aqm.KindFQCodel:
		r = []string{"codel", "limit"}
	case aqm.KindPIE:
		r = []string{"pie", "limit"}
	case aqm.KindDOCSIS:
		r = []string{"classic", "ramp", "coupled", "overload", "limit"}
	default:
		r = []string{"limit"}
	}
	return append(r, "loss", "nobuffer", "write")
}
