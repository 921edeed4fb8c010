package aqm

import (
	"encoding/json"
	"strconv"
)

// The xstats of codel, pie, fq_codel and docsis's queue protection as
// `tc -s qdisc` names them, in tc's units (times in µs, a probability as
// a fraction): the one place the JSON outputs take those names from.

// TCStat is one figure of a queue's xstats: tc's name, and the value in
// tc's unit (an integer, a bool, or a float64 for a probability).
type TCStat struct {
	Name  string
	Value any
}

// TCStats are a queue's xstats in tc's order. As JSON they are one
// object, Name: Value, in that order.
type TCStats []TCStat

// MarshalJSON writes the object.
func (s TCStats) MarshalJSON() ([]byte, error) {
	b := []byte{'{'}
	for i, x := range s {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendQuote(b, x.Name)
		v, err := json.Marshal(x.Value)
		if err != nil {
			return nil, err
		}
		b = append(append(b, ':'), v...)
	}
	return append(b, '}'), nil
}

// usOf is ns in whole µs, as the kernel reports its xstats' times.
func usOf(ns int64) int64 { return ns / 1000 }

// TC returns codel's xstats as tc -s shows them (q_codel.c).
func (x *CodelXStats) TC() TCStats {
	return TCStats{{"count", x.Count}, {"lastcount", x.LastCount}, {"ldelay_us", usOf(x.LDelay)}, {"dropping", x.Dropping},
		{"drop_next_us", usOf(x.DropNext)}, {"maxpacket", x.MaxPacket}, {"ecn_mark", x.ECNMark},
		{"drop_overlimit", x.DropOverlimit}, {"ce_mark", x.CEMark}}
}

// TC returns pie's xstats as tc -s shows them (q_pie.c); avg_dq_rate is
// in bytes/s, set with dq_rate_estimator.
func (x *PIEXStats) TC() TCStats {
	return TCStats{{"prob", float64(x.Prob) / PIEMaxProb}, {"delay_us", usOf(x.Delay)}, {"avg_dq_rate", x.AvgDQRate},
		{"pkts_in", x.PacketsIn}, {"overlimit", x.Overlimit}, {"dropped", x.Dropped}, {"maxq", x.MaxQ}, {"ecn_mark", x.ECNMark}}
}

// TC returns fq_codel's xstats as tc -s shows them (q_fq_codel.c).
func (x *FQCodelXStats) TC() TCStats {
	return TCStats{{"maxpacket", x.MaxPacket}, {"drop_overlimit", x.DropOverlimit}, {"new_flow_count", x.NewFlowCount},
		{"ecn_mark", x.ECNMark}, {"ce_mark", x.CEMark}, {"memory_used", x.MemoryUsage}, {"drop_overmemory", x.DropOvermemory},
		{"new_flows_len", x.NewFlowsLen}, {"old_flows_len", x.OldFlowsLen}}
}

// TC returns queue protection's counters under the names pi2hop's
// outputs give them.
func (x *QProtStats) TC() TCStats {
	return TCStats{{"sanctioned_packets", x.SanctionedPackets}, {"sanctioned_flows", x.SanctionedFlows},
		{"default_bucket", x.DefaultBucket}}
}

// TC returns the docsis kind's Classic AQM state under the names pi2hop's
// outputs give it: p_C as a fraction (per 1024-byte packet for
// DOCSIS-PIE, so above 1 at times), DOCSIS-PIE's delay estimate and
// burst allowance in µs and its burst state.
func (x *DOCSISClassicStats) TC() TCStats {
	return TCStats{{"aqm", x.AQM}, {"prob_c", float64(x.ProbC) / DOCSISProbOne}, {"qdelay_us", usOf(x.QDelay)},
		{"burst_allowance_us", usOf(x.BurstAllowance)}, {"burst_state", x.BurstState}}
}
