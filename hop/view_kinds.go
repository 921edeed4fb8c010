package hop

import "github.com/pi2hop/pi2hop/aqm"

// The xstats of codel, pie, fq_codel and docsis's queue protection, with
// tc's names and units (times in µs), in View under the qdisc's name.

// CodelView is tc -s's codel xstats.
type CodelView struct {
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

// PIEView is tc -s's pie xstats.
type PIEView struct {
	Prob      float64 `json:"prob"`
	DelayUs   int64   `json:"delay_us"`
	AvgDQRate uint32  `json:"avg_dq_rate"` // bytes/s, with dq_rate_estimator
	PktsIn    uint64  `json:"pkts_in"`
	Overlimit uint64  `json:"overlimit"`
	Dropped   uint64  `json:"dropped"`
	MaxQ      uint64  `json:"maxq"`
	ECNMark   uint64  `json:"ecn_mark"`
}

// FQCodelView is tc -s's fq_codel xstats.
type FQCodelView struct {
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

// QProtView is docsis queue protection's counters.
type QProtView struct {
	SanctionedPackets uint64 `json:"sanctioned_packets"`
	SanctionedFlows   uint64 `json:"sanctioned_flows"`
	DefaultBucket     uint64 `json:"default_bucket"`
}

// addXStats fills the view of the queue's own kind.
func (v *View) addXStats(q *aqm.Stats) {
	us := func(ns int64) int64 { return ns / 1000 }
	switch q.Kind {
	case aqm.KindCoDel:
		x := &q.CoDel
		v.CoDel = &CodelView{x.Count, x.LastCount, us(x.LDelay), x.Dropping, us(x.DropNext), x.MaxPacket, x.ECNMark, x.DropOverlimit, x.CEMark}
	case aqm.KindPIE:
		x := &q.PIE
		v.PIE = &PIEView{float64(x.Prob) / aqm.PIEMaxProb, us(x.Delay), x.AvgDQRate, x.PacketsIn, x.Overlimit, x.Dropped, x.MaxQ, x.ECNMark}
	case aqm.KindFQCodel:
		x := &q.FQ
		v.FQCodel = &FQCodelView{x.MaxPacket, x.DropOverlimit, x.NewFlowCount, x.ECNMark, x.CEMark, x.MemoryUsage, x.DropOvermemory, x.NewFlowsLen, x.OldFlowsLen}
	case aqm.KindDOCSIS:
		v.QProt = &QProtView{q.QProt.SanctionedPackets, q.QProt.SanctionedFlows, q.QProt.DefaultBucket}
	}
}
