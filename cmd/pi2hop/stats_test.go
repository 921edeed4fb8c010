package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/hop"
	"github.com/pi2hop/pi2hop/instance"
	"github.com/pi2hop/pi2hop/shaper"
)

func TestStatsViewPrintsTcFigures(t *testing.T) {
	var s hop.DirStats
	s.Dir = hop.Down
	s.Kind = aqm.KindDualPI2
	s.Rate, s.Bps, s.Delay = "10mbit", 10_000_000, int64(10*time.Millisecond)
	s.Spec = aqm.Spec{Kind: aqm.KindDualPI2, DualPI2: aqm.DefaultConfig()}
	s.Elapsed = int64(time.Second)
	s.Link.Busy = int64(500 * time.Millisecond)
	s.Queue.Prob = aqm.MaxProb / 4
	s.Queue.DelayC = 1_500_000
	s.Queue.ECNMark = 7
	s.Queue.StepMarks = 3
	s.OutBytes = 625_000
	s.QueueDrops[aqm.ReasonClassic] = 5
	for i := 0; i < 100; i++ {
		s.SojournL.Add(int64(i) * 10_000)
	}
	v := s.Row(nil)
	var b bytes.Buffer
	instance.WriteDirRow(&b, &v)
	for _, want := range []string{"down (server -> client):", "prob 0.250000 delay_c 1500us delay_l 0us",
		"ecn_mark 7 step_marks 3", "classic 5", "TUN ring drops 0", "L p50 0.49ms p99 0.98ms max 0.99ms", "cpu -/pkt",
		"\n qdisc dualpi2 limit 10000p memlimit 30000000B target 15ms tupdate 16ms alpha 0.156250 beta 3.195312 step_thresh 1ms min_qlen_step 0p coupling_factor 2 drop_on_overload drop_dequeue classic_protection 10% l4s_ect split_gso\n",
		"\n link rate 10Mbit delay 10ms\n"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, b.String())
		}
	}
}

// The fault line appears when a fault is set or has acted, with the
// counts by kind; a hop that never had one prints none.
func TestStatsViewECNFaultLine(t *testing.T) {
	for _, tt := range []struct {
		spec   string
		counts map[shaper.FaultKind]uint64
		want   string
	}{
		{"", nil, ""},
		{"bleach,after=2s", nil, "ecn fault bleach,after=2s: rewrote or dropped no packet yet"},
		{"ce-bleach,after", map[shaper.FaultKind]uint64{shaper.FaultCEBleach: 12}, "ecn fault ce-bleach,after: rewrote or dropped ce-bleach 12"},
		{"", map[shaper.FaultKind]uint64{shaper.FaultBleach: 3, shaper.FaultDropECT: 4}, "ecn fault none: rewrote or dropped bleach 3, drop-ect 4"},
	} {
		var s hop.DirStats
		s.Kind, s.Fault = aqm.KindDualPI2, tt.spec
		for k, n := range tt.counts {
			s.Link.Faults[k] = n
		}
		v := s.Row(nil)
		var b bytes.Buffer
		instance.WriteDirRow(&b, &v)
		if tt.want == "" && strings.Contains(b.String(), "ecn fault") || !strings.Contains(b.String(), tt.want) {
			t.Errorf("fault %q %v: output\n%s\nwant a line %q", tt.spec, tt.counts, b.String(), tt.want)
		}
		if v.ECNFaults["drop-ect"] != tt.counts[shaper.FaultDropECT] || len(v.ECNFaults) != shaper.NumFaultKinds-1 {
			t.Errorf("JSON ecn_faults %v", v.ECNFaults)
		}
	}
}
