package main

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
)

// replay --aqm takes every kind: the same trace (an ECT(1) flow and a
// Not-ECT flow with DSCP 45, together at twice the 10 Mbit/s link) gives
// each queue's own reasons, per-kind summary counts and configuration.
func TestReplayKinds(t *testing.T) {
	var b strings.Builder
	b.WriteString("time_ns,bytes,ecn,flow,dscp\n")
	for i := range 4000 {
		ecn, flow, dscp := "1", "1", "0"
		if i%2 == 1 {
			ecn, flow, dscp = "0", "2", "45"
		}
		b.WriteString(strconv.Itoa(i*600_000) + ",1500," + ecn + "," + flow + "," + dscp + "\n")
	}
	trace := b.String()
	for _, tc := range []struct {
		args          []string
		markReason    string // of ECT(1) marks
		dropReason    string // of Not-ECT drops
		summaryObject string // the kind's own summary object
	}{
		{[]string{"--aqm", "codel", "--ecn"}, "codel", "codel", `"codel":{"count":`},
		// An unresponsive load at twice the rate takes PIE's p past 10 %
		// within its first updates, so ECT(1) is dropped, not marked
		// (the marking rule itself: aqm's TestPIEECNBelowTenPercent).
		{[]string{"--aqm", "pie", "--ecn"}, "", "pie", `"pie":{"prob":`},
		{[]string{"--aqm", "fq_codel"}, "codel", "codel", `"fq_codel":{"maxpacket":1500`},
		// Both flows are unresponsive: queue protection sanctions them.
		{[]string{"--aqm", "docsis"}, "ramp", "classic", `"queue_protection":{"sanctioned_packets":`},
		// Without it, the NQB flow (Not-ECT, DSCP 45) keeps the L queue.
		{[]string{"--aqm", "docsis", "--nqb", "--queue-protection=false"}, "ramp", "", `"queue_protection":{"sanctioned_packets":0`},
		// The Classic AQM before DOCSIS-PIE, on request.
		{[]string{"--aqm", "docsis", "--docsis-classic", "pi2"}, "ramp", "classic", `"docsis_classic":{"aqm":"pi2"`},
	} {
		t.Run(strings.Join(tc.args[1:], " "), func(t *testing.T) {
			out, err := runCLI(t, trace, append([]string{"replay", "--trace", "-"}, tc.args...)...)
			if err != nil {
				t.Fatal(err)
			}
			got := parseReplay(t, out)
			marks, drops := map[string]int{}, map[string]int{}
			subs := map[uint32]map[uint64]bool{}
			queues := map[uint32]map[string]int{}
			for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
				var p struct {
					Type, Verdict, Reason, Queue string
					Flow                         uint32
					ECNIn                        int    `json:"ecn_in"`
					Sub                          uint64 `json:"sub"`
				}
				json.Unmarshal([]byte(l), &p)
				if p.Type != "pkt" {
					continue
				}
				switch {
				case p.Verdict == "marked" && p.ECNIn == 1:
					marks[p.Reason]++
				case p.Verdict == "dropped" && p.ECNIn == 0:
					drops[p.Reason]++
				}
				if subs[p.Flow] == nil {
					subs[p.Flow], queues[p.Flow] = map[uint64]bool{}, map[string]int{}
				}
				subs[p.Flow][p.Sub] = true
				queues[p.Flow][p.Queue]++
			}
			t.Logf("%v: ECT(1) marks %v, Not-ECT drops %v, queues %v", tc.args, marks, drops, queues)
			if tc.markReason != "" && marks[tc.markReason] == 0 {
				t.Errorf("no ECT(1) mark for %q", tc.markReason)
			}
			if tc.dropReason != "" && drops[tc.dropReason] == 0 {
				t.Errorf("no Not-ECT drop for %q", tc.dropReason)
			}
			if !strings.Contains(out, tc.summaryObject) {
				t.Errorf("summary lacks %s", tc.summaryObject)
			}
			if got.summary.Config["aqm"] != tc.args[1] {
				t.Errorf("config aqm %v, want %s", got.summary.Config["aqm"], tc.args[1])
			}
			switch strings.Join(tc.args, " ") {
			case "--aqm fq_codel":
				// Each flow in its own bucket: one flow number per flow,
				// and they differ.
				if len(subs[1]) != 1 || len(subs[2]) != 1 || subs[1][0] || subs[2][0] {
					t.Errorf("flow numbers %v: want one non-zero number per flow", subs)
				}
			case "--aqm docsis":
				if !strings.Contains(out, `"sanctioned_flows":`) || strings.Contains(out, `"sanctioned_packets":0,`) {
					t.Errorf("no sanctions of unresponsive flows")
				}
				if queues[2]["L"] != 0 {
					t.Errorf("without --nqb the DSCP 45 flow used the L queue: %v", queues[2])
				}
				if !strings.Contains(out, `"docsis_classic":{"aqm":"pie","prob_c":`) || got.summary.Config["docsis-classic"] != "pie" {
					t.Errorf("the default Classic AQM is not DOCSIS-PIE in the summary")
				}
			case "--aqm docsis --nqb --queue-protection=false":
				// NQB: the Not-ECT DSCP 45 flow uses the L queue.
				if queues[2]["L"] == 0 || queues[2]["C"] != 0 {
					t.Errorf("NQB flow's queues %v, want L only", queues[2])
				}
			}
		})
	}
}
