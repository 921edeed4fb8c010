package aqm

import (
	"encoding/json"
	"testing"
)

// Each kind's xstats as JSON: tc's names in tc's order, times in whole
// µs (truncated, as the kernel's codel_time_to_us and pie's delay), pie's
// probability as a fraction of PIEMaxProb.
func TestTCStatsJSON(t *testing.T) {
	for _, tt := range []struct {
		name string
		s    TCStats
		want string
	}{
		{"codel", (&CodelXStats{Count: 4, LastCount: 1, LDelay: 20_000_999, Dropping: true, DropNext: 3_000_000,
			MaxPacket: 1500, ECNMark: 7, DropOverlimit: 2, CEMark: 3}).TC(),
			`{"count":4,"lastcount":1,"ldelay_us":20000,"dropping":true,"drop_next_us":3000,"maxpacket":1500,"ecn_mark":7,"drop_overlimit":2,"ce_mark":3}`},
		{"pie", (&PIEXStats{Prob: PIEMaxProb / 4, Delay: 15_000_000, AvgDQRate: 1250000, PacketsIn: 9, Overlimit: 1,
			Dropped: 2, MaxQ: 5, ECNMark: 3}).TC(),
			`{"prob":0.25,"delay_us":15000,"avg_dq_rate":1250000,"pkts_in":9,"overlimit":1,"dropped":2,"maxq":5,"ecn_mark":3}`},
		{"fq_codel", (&FQCodelXStats{MaxPacket: 1514, DropOverlimit: 64, NewFlowCount: 12, ECNMark: 5, CEMark: 1,
			MemoryUsage: 3000, DropOvermemory: 4, NewFlowsLen: 1, OldFlowsLen: 2}).TC(),
			`{"maxpacket":1514,"drop_overlimit":64,"new_flow_count":12,"ecn_mark":5,"ce_mark":1,"memory_used":3000,"drop_overmemory":4,"new_flows_len":1,"old_flows_len":2}`},
		{"queue protection", (&QProtStats{SanctionedPackets: 30, SanctionedFlows: 1, DefaultBucket: 2}).TC(),
			`{"sanctioned_packets":30,"sanctioned_flows":1,"default_bucket":2}`},
	} {
		b, err := json.Marshal(tt.s)
		if err != nil || string(b) != tt.want {
			t.Errorf("%s: %s, %v\nwant %s", tt.name, b, err, tt.want)
		}
	}
}
