package hop

import (
	"fmt"
	"time"

	"github.com/pi2hop/pi2hop/aqm"
)

// The xstats of codel, pie, fq_codel and docsis's queue protection, with
// tc's names and units (times in µs), in StatsRow under the qdisc's name.

// CodelXStats is tc -s's codel xstats.
type CodelXStats struct {
	Count         uint32 `json:"count"`
	LastCount     uint32 `json:"lastcount"`
	LDelayUs      int64  `json:"ldelay_us"`
	Dropping      bool   `json:"dropping"`
	DropNextUs    int64  `json:"drop_next_us"`
	MaxPacket     uint32 `json:"maxpacket"`
	ECNMark       uint64 `json:"ecn_mark"`
	DropOverlimit uint64 `json:"drop_overlimit"`
	CEMark        uint64 `json:"ce_mark"`
}

// PIEXStats is tc -s's pie xstats.
type PIEXStats struct {
	Prob      float64 `json:"prob"`
	DelayUs   int64   `json:"delay_us"`
	AvgDQRate uint32  `json:"avg_dq_rate"` // bytes/s, with dq_rate_estimator
	PktsIn    uint64  `json:"pkts_in"`
	Overlimit uint64  `json:"overlimit"`
	Dropped   uint64  `json:"dropped"`
	MaxQ      uint64  `json:"maxq"`
	ECNMark   uint64  `json:"ecn_mark"`
}

// FQCodelXStats is tc -s's fq_codel xstats.
type FQCodelXStats struct {
	MaxPacket      uint32 `json:"maxpacket"`
	DropOverlimit  uint64 `json:"drop_overlimit"`
	NewFlowCount   uint64 `json:"new_flow_count"`
	ECNMark        uint64 `json:"ecn_mark"`
	CEMark         uint64 `json:"ce_mark"`
	MemoryUsed     uint64 `json:"memory_used"`
	DropOvermemory uint64 `json:"drop_overmemory"`
	NewFlowsLen    int    `json:"new_flows_len"`
	OldFlowsLen    int    `json:"old_flows_len"`
}

// QProtXStats is docsis queue protection's counters.
type QProtXStats struct {
	SanctionedPackets uint64 `json:"sanctioned_packets"`
	SanctionedFlows   uint64 `json:"sanctioned_flows"`
	DefaultBucket     uint64 `json:"default_bucket"`
}

// DOCSISClassicXStats is the docsis kind's Classic AQM: DOCSIS-PIE's (or
// PI2's) p_C, and DOCSIS-PIE's delay estimate and burst protection.
type DOCSISClassicXStats struct {
	AQM              string  `json:"aqm"`
	ProbC            float64 `json:"prob_c"`
	QDelayUs         int64   `json:"qdelay_us"`
	BurstAllowanceUs int64   `json:"burst_allowance_us"`
	BurstState       string  `json:"burst_state"`
}

// addXStats fills in the xstats of the queue's own kind.
func (v *StatsRow) addXStats(q *aqm.Stats) {
	us := func(ns int64) int64 { return ns / 1000 }
	switch q.Kind {
	case aqm.KindCoDel:
		x := &q.CoDel
		v.CoDel = &CodelXStats{x.Count, x.LastCount, us(x.LDelay), x.Dropping, us(x.DropNext), x.MaxPacket, x.ECNMark, x.DropOverlimit, x.CEMark}
	case aqm.KindPIE:
		x := &q.PIE
		v.PIE = &PIEXStats{float64(x.Prob) / aqm.PIEMaxProb, us(x.Delay), x.AvgDQRate, x.PacketsIn, x.Overlimit, x.Dropped, x.MaxQ, x.ECNMark}
	case aqm.KindFQCodel:
		x := &q.FQ
		v.FQCodel = &FQCodelXStats{x.MaxPacket, x.DropOverlimit, x.NewFlowCount, x.ECNMark, x.CEMark, x.MemoryUsage, x.DropOvermemory, x.NewFlowsLen, x.OldFlowsLen}
	case aqm.KindDOCSIS:
		v.QProt = &QProtXStats{q.QProt.SanctionedPackets, q.QProt.SanctionedFlows, q.QProt.DefaultBucket}
		x := &q.DOCSISClassic
		v.DOCSISClassic = &DOCSISClassicXStats{x.AQM, float64(x.ProbC) / aqm.DOCSISProbOne, us(x.QDelay), us(x.BurstAllowance), x.BurstState}
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
	switch {
	case v.CoDel != nil:
		x := v.CoDel
		line := fmt.Sprintf("count %d lastcount %d ldelay %s", x.Count, x.LastCount, usd(x.LDelayUs))
		if x.Dropping {
			line += " dropping drop_next " + usd(x.DropNextUs)
		}
		add("%s", line)
		line = fmt.Sprintf("maxpacket %d ecn_mark %d drop_overlimit %d", x.MaxPacket, x.ECNMark, x.DropOverlimit)
		if x.CEMark > 0 {
			line += fmt.Sprintf(" ce_mark %d", x.CEMark)
		}
		add("%s", line)
	case v.PIE != nil:
		x := v.PIE
		line := fmt.Sprintf("prob %g delay %s", x.Prob, usd(x.DelayUs))
		if x.AvgDQRate > 0 {
			line += fmt.Sprintf(" avg_dq_rate %d", x.AvgDQRate)
		}
		add("%s", line)
		add("pkts_in %d overlimit %d dropped %d maxq %d ecn_mark %d", x.PktsIn, x.Overlimit, x.Dropped, x.MaxQ, x.ECNMark)
	case v.FQCodel != nil:
		x := v.FQCodel
		line := fmt.Sprintf("maxpacket %d drop_overlimit %d new_flow_count %d ecn_mark %d", x.MaxPacket, x.DropOverlimit, x.NewFlowCount, x.ECNMark)
		if x.CEMark > 0 {
			line += fmt.Sprintf(" ce_mark %d", x.CEMark)
		}
		add("%s memory_used %d drop_overmemory %d", line, x.MemoryUsed, x.DropOvermemory)
		add("new_flows_len %d old_flows_len %d", x.NewFlowsLen, x.OldFlowsLen)
	case v.QProt != nil:
		x := v.QProt
		add("prob %f delay_c %dus delay_l %dus", v.Prob, v.DelayCus, v.DelayLus)
		add("pkts_in_c %d pkts_in_l %d maxq %d ecn_mark %d", v.PktsInC, v.PktsInL, v.MaxQ, v.ECNMark)
		add("queue protection: sanctioned_packets %d sanctioned_flows %d default_bucket %d", x.SanctionedPackets, x.SanctionedFlows, x.DefaultBucket)
		if c := v.DOCSISClassic; c != nil && c.AQM == aqm.DOCSISClassicPIE {
			add("classic docsis-pie: prob_c %g qdelay %s burst_allowance %s burst %s", c.ProbC, usd(c.QDelayUs), usd(c.BurstAllowanceUs), c.BurstState)
		} else if c != nil && c.AQM != "" {
			add("classic %s: prob_c %g", c.AQM, c.ProbC)
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
