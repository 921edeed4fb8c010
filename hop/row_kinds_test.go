package hop

import (
	"slices"
	"testing"

	"github.com/pi2hop/pi2hop/aqm"
)

// Each kind's lines are tc -s qdisc's for that qdisc: its names, units
// (times in µs or Go durations as tc's sprint_time), and the figures tc
// prints only when set left out while zero.
func TestQdiscLines(t *testing.T) {
	tests := []struct {
		name string
		q    aqm.Stats
		want []string
	}{
		{"dualpi2", aqm.Stats{Kind: aqm.KindDualPI2, Prob: aqm.MaxProb / 4, DelayC: 1_500_000, DelayL: 200_000, PktsInC: 5, PktsInL: 6,
			MaxQ: 7, ECNMark: 8, StepMarks: 9, Credit: 10, MemoryUsed: 3000, MaxMemoryUsed: 9000, MemoryLimit: 150000},
			[]string{"prob 0.250000 delay_c 1500us delay_l 200us", "pkts_in_c 5 pkts_in_l 6 maxq 7", "ecn_mark 8 step_marks 9",
				"credit 10 (C)", "memory used: 3000 (max: 9000) of 150000B"}},
		{"fifo", aqm.Stats{Kind: aqm.KindFIFO}, nil},
		{"codel dropping", aqm.Stats{Kind: aqm.KindCoDel, CoDel: aqm.CodelXStats{Count: 4, LastCount: 1, LDelay: 20_000_000, Dropping: true,
			DropNext: 3_000_000, MaxPacket: 1500, ECNMark: 7, DropOverlimit: 2, CEMark: 3}},
			[]string{"count 4 lastcount 1 ldelay 20ms dropping drop_next 3ms", "maxpacket 1500 ecn_mark 7 drop_overlimit 2 ce_mark 3"}},
		{"codel idle", aqm.Stats{Kind: aqm.KindCoDel, CoDel: aqm.CodelXStats{LDelay: 250_000}},
			[]string{"count 0 lastcount 0 ldelay 250µs", "maxpacket 0 ecn_mark 0 drop_overlimit 0"}},
		{"pie", aqm.Stats{Kind: aqm.KindPIE, PIE: aqm.PIEXStats{Prob: aqm.PIEMaxProb / 4, Delay: 15_000_000, AvgDQRate: 1250000,
			PacketsIn: 9, Overlimit: 1, Dropped: 2, MaxQ: 5, ECNMark: 3}},
			[]string{"prob 0.25 delay 15ms avg_dq_rate 1250000", "pkts_in 9 overlimit 1 dropped 2 maxq 5 ecn_mark 3"}},
		{"fq_codel", aqm.Stats{Kind: aqm.KindFQCodel, FQ: aqm.FQCodelXStats{MaxPacket: 1514, DropOverlimit: 64, NewFlowCount: 12,
			ECNMark: 5, NewFlowsLen: 1, OldFlowsLen: 2, MemoryUsage: 3000, DropOvermemory: 4}},
			[]string{"maxpacket 1514 drop_overlimit 64 new_flow_count 12 ecn_mark 5 memory_used 3000 drop_overmemory 4",
				"new_flows_len 1 old_flows_len 2"}},
		{"docsis", aqm.Stats{Kind: aqm.KindDOCSIS, Prob: aqm.MaxProb / 2, DelayC: 2_000_000, PktsInC: 3, PktsInL: 4, MaxQ: 5, ECNMark: 6,
			QProt: aqm.QProtStats{SanctionedPackets: 30, SanctionedFlows: 1, DefaultBucket: 2},
			DOCSISClassic: aqm.DOCSISClassicStats{AQM: aqm.DOCSISClassicPIE, ProbC: aqm.DOCSISProbOne / 4, QDelay: 12_000_000,
				BurstAllowance: 46_000_000, BurstState: "protecting"}},
			[]string{"prob 0.500000 delay_c 2000us delay_l 0us", "pkts_in_c 3 pkts_in_l 4 maxq 5 ecn_mark 6",
				"queue protection: sanctioned_packets 30 sanctioned_flows 1 default_bucket 2",
				"classic docsis-pie: prob_c 0.25 qdelay 12ms burst_allowance 46ms burst protecting"}},
		{"docsis pi2", aqm.Stats{Kind: aqm.KindDOCSIS, Prob: aqm.MaxProb / 2,
			DOCSISClassic: aqm.DOCSISClassicStats{AQM: aqm.DOCSISClassicPI2, ProbC: aqm.DOCSISProbOne / 4}},
			[]string{"prob 0.500000 delay_c 0us delay_l 0us", "pkts_in_c 0 pkts_in_l 0 maxq 0 ecn_mark 0",
				"queue protection: sanctioned_packets 0 sanctioned_flows 0 default_bucket 0", "classic pi2: prob_c 0.25"}},
	}
	for _, tt := range tests {
		s := DirStats{Kind: tt.q.Kind, Queue: tt.q}
		v := s.Row(nil)
		if got := v.QdiscLines(); !slices.Equal(got, tt.want) {
			t.Errorf("%s:\n got %q\nwant %q", tt.name, got, tt.want)
		}
	}
}

// Credit 0 or less: the L queue goes next (sch_dualpi2 serves C only with
// positive credit).
func TestQdiscLinesCreditNext(t *testing.T) {
	s := DirStats{Kind: aqm.KindDualPI2, Queue: aqm.Stats{Kind: aqm.KindDualPI2}}
	v := s.Row(nil)
	if l := v.QdiscLines(); l[3] != "credit 0 (L)" {
		t.Errorf("credit line %q, want credit 0 (L)", l[3])
	}
}

func TestDropReasons(t *testing.T) {
	for kind, want := range map[string][]string{
		aqm.KindDualPI2: {"classic", "coupled", "step", "overload", "limit", "loss", "ecn_fault", "nobuffer", "write"},
		aqm.KindFIFO:    {"limit", "loss", "ecn_fault", "nobuffer", "write"},
		aqm.KindFQCodel: {"codel", "limit", "loss", "ecn_fault", "nobuffer", "write"},
		aqm.KindPIE:     {"pie", "limit", "loss", "ecn_fault", "nobuffer", "write"},
		aqm.KindDOCSIS:  {"classic", "ramp", "coupled", "overload", "limit", "loss", "ecn_fault", "nobuffer", "write"},
	} {
		if got := DropReasons(kind); !slices.Equal(got, want) {
			t.Errorf("%s: %q, want %q", kind, got, want)
		}
	}
}
