package hop

import (
	"fmt"
	"time"

	"github.com/pi2hop/pi2hop/aqm"
)

// addXStats fills in the xstats of the queue's own kind, as aqm names
// them for tc (aqm.TCStats), and keeps q for QdiscLines.
func (v *StatsRow) addXStats(q *aqm.Stats) {
	v.queue = *q
	switch q.Kind {
	case aqm.KindCoDel:
		v.CoDel = q.CoDel.TC()
	case aqm.KindPIE:
		v.PIE = q.PIE.TC()
	case aqm.KindFQCodel:
		v.FQCodel = q.FQ.TC()
	case aqm.KindDOCSIS:
		v.QProt = q.QProt.TC()
		v.DOCSISClassic = q.DOCSISClassic.TC()
	}
}

// QdiscLines are the lines tc -s qdisc show prints for v's qdisc after
// its backlog line, in tc's words, units and order (sch_dualpi2's,
// q_codel.c's, q_pie.c's, q_fq_codel.c's print_xstats; docsis: dualpi2's
// first lines, then queue protection's), without tc's two-space indent.
// fifo has none. A figure tc prints only when set (codel's drop_next,
// ce_mark, pie's avg_dq_rate) is left out when it is.
func (v *StatsRow) QdiscLines() []string {
	usd := func(us int64) string { return (time.Duration(us) * time.Microsecond).String() }
	var l []string
	add := func(format string, a ...any) { l = append(l, fmt.Sprintf(format, a...)) }
	if v.Qdisc == aqm.KindDualPI2 {
		add("prob %f delay_c %dus delay_l %dus", v.Prob, v.DelayCus, v.DelayLus)
		add("pkts_in_c %d pkts_in_l %d maxq %d", v.PktsInC, v.PktsInL, v.MaxQ)
		add("ecn_mark %d step_marks %d", v.ECNMark, v.StepMarks)
		next := "L" // the WRR queue that goes next: C once its credit is positive
		if v.Credit > 0 {
			next = "C"
		}
		add("credit %d (%s)", v.Credit, next)
		add("memory used: %d (max: %d) of %dB", v.MemUsed, v.MemMax, v.MemLimit)
	}
	us := func(ns int64) string { return usd(ns / 1000) }
	switch q := &v.queue; q.Kind {
	case aqm.KindCoDel:
		x := &q.CoDel
		line := fmt.Sprintf("count %d lastcount %d ldelay %s", x.Count, x.LastCount, us(x.LDelay))
		if x.Dropping {
			line += " dropping drop_next " + us(x.DropNext)
		}
		add("%s", line)
		line = fmt.Sprintf("maxpacket %d ecn_mark %d drop_overlimit %d", x.MaxPacket, x.ECNMark, x.DropOverlimit)
		if x.CEMark > 0 {
			line += fmt.Sprintf(" ce_mark %d", x.CEMark)
		}
		add("%s", line)
	case aqm.KindPIE:
		x := &q.PIE
		line := fmt.Sprintf("prob %g delay %s", float64(x.Prob)/aqm.PIEMaxProb, us(x.Delay))
		if x.AvgDQRate > 0 {
			line += fmt.Sprintf(" avg_dq_rate %d", x.AvgDQRate)
		}
		add("%s", line)
		add("pkts_in %d overlimit %d dropped %d maxq %d ecn_mark %d", x.PacketsIn, x.Overlimit, x.Dropped, x.MaxQ, x.ECNMark)
	case aqm.KindFQCodel:
		x := &q.FQ
		line := fmt.Sprintf("maxpacket %d drop_overlimit %d new_flow_count %d ecn_mark %d", x.MaxPacket, x.DropOverlimit, x.NewFlowCount, x.ECNMark)
		if x.CEMark > 0 {
			line += fmt.Sprintf(" ce_mark %d", x.CEMark)
		}
		add("%s memory_used %d drop_overmemory %d", line, x.MemoryUsage, x.DropOvermemory)
		add("new_flows_len %d old_flows_len %d", x.NewFlowsLen, x.OldFlowsLen)
	case aqm.KindDOCSIS:
		x := &q.QProt
		add("prob %f delay_c %dus delay_l %dus", v.Prob, v.DelayCus, v.DelayLus)
		add("pkts_in_c %d pkts_in_l %d maxq %d ecn_mark %d", v.PktsInC, v.PktsInL, v.MaxQ, v.ECNMark)
		add("queue protection: sanctioned_packets %d sanctioned_flows %d default_bucket %d", x.SanctionedPackets, x.SanctionedFlows, x.DefaultBucket)
		c := &q.DOCSISClassic
		pc := float64(c.ProbC) / aqm.DOCSISProbOne
		if c.AQM == aqm.DOCSISClassicPIE {
			add("classic docsis-pie: prob_c %g qdelay %s burst_allowance %s burst %s", pc, us(c.QDelay), us(c.BurstAllowance), c.BurstState)
		} else if c.AQM != "" {
			add("classic %s: prob_c %g", c.AQM, pc)
		}
	}
	return l
}

// DropReasons are the names of the drops a hop of this queue kind can
// count, in the order stats lists them: the queue's own reasons, then the
// link's and hop's (loss on the link, a drop-ect path fault, no free
// buffer, failed TUN write). A reason
// the kind cannot give is left out, so a zero means "did not happen".
func DropReasons(kind string) []string {
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
	return append(r, "loss", "ecn_fault", "nobuffer", "write")
}
