package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/hop"
	"github.com/pi2hop/pi2hop/instance"
)

// Each kind prints its own tc -s xstats, with tc's names, and carries
// them in the JSON under its qdisc's name.
func TestStatsViewPerKind(t *testing.T) {
	for _, tc := range []struct {
		q        aqm.Stats
		text     []string
		jsonKey  string
		notDrops string
	}{
		{aqm.Stats{Kind: aqm.KindCoDel, CoDel: aqm.CodelXStats{Count: 4, LastCount: 1, LDelay: 20_000_000, Dropping: true,
			DropNext: 3_000_000, MaxPacket: 1500, ECNMark: 7, DropOverlimit: 2, CEMark: 3}},
			[]string{"count 4 lastcount 1 ldelay 20ms dropping drop_next 3ms", "maxpacket 1500 ecn_mark 7 drop_overlimit 2 ce_mark 3", "drops: codel 0, limit 0"},
			`"codel":{"count":4`, "step"},
		{aqm.Stats{Kind: aqm.KindPIE, PIE: aqm.PIEXStats{Prob: aqm.PIEMaxProb / 4, Delay: 15_000_000, PacketsIn: 9, Overlimit: 1, Dropped: 2, MaxQ: 5, ECNMark: 3}},
			[]string{"prob 0.25 delay 15ms", "pkts_in 9 overlimit 1 dropped 2 maxq 5 ecn_mark 3", "drops: pie 0"},
			`"pie":{"prob":0.25`, "codel"},
		{aqm.Stats{Kind: aqm.KindFQCodel, FQ: aqm.FQCodelXStats{MaxPacket: 1514, DropOverlimit: 64, NewFlowCount: 12, ECNMark: 5, NewFlowsLen: 1, OldFlowsLen: 2, MemoryUsage: 3000}},
			[]string{"maxpacket 1514 drop_overlimit 64 new_flow_count 12 ecn_mark 5 memory_used 3000", "new_flows_len 1 old_flows_len 2"},
			`"fq_codel":{"maxpacket":1514`, "pie"},
		{aqm.Stats{Kind: aqm.KindDOCSIS, QProt: aqm.QProtStats{SanctionedPackets: 30, SanctionedFlows: 1}},
			[]string{"queue protection: sanctioned_packets 30 sanctioned_flows 1", "drops: classic 0, ramp 0"},
			`"queue_protection":{"sanctioned_packets":30`, "codel"},
	} {
		s := hop.DirStats{Dir: hop.Up, Kind: tc.q.Kind, Queue: tc.q}
		v := s.Row(nil)
		var b strings.Builder
		instance.WriteDirRow(&b, &v)
		for _, want := range tc.text {
			if !strings.Contains(b.String(), want) {
				t.Errorf("%s: output lacks %q:\n%s", tc.q.Kind, want, b.String())
			}
		}
		if strings.Contains(b.String(), tc.notDrops+" 0,") {
			t.Errorf("%s: lists %s drops it cannot make:\n%s", tc.q.Kind, tc.notDrops, b.String())
		}
		j, _ := json.Marshal(v)
		if !strings.Contains(string(j), tc.jsonKey) {
			t.Errorf("%s: JSON lacks %s: %s", tc.q.Kind, tc.jsonKey, j)
		}
	}
}
