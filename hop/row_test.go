package hop

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/internal/jsonline"
)

// The figures of one direction: totals since the start, rates over the
// interval since the previous snapshot when one is given.
func TestStatsRowIntervalAndTotals(t *testing.T) {
	var s DirStats
	s.Dir = Down
	s.Kind = aqm.KindDualPI2
	s.Delay = int64(10 * time.Millisecond)
	s.Elapsed = int64(time.Second)
	s.Link.Busy = int64(500 * time.Millisecond)
	s.Queue.Prob = aqm.MaxProb / 4
	s.Queue.DelayC = 1_500_000
	s.OutBytes = 625_000
	s.In, s.CPU = 1000, int64(2*time.Millisecond)
	s.QueueDrops[aqm.ReasonClassic] = 5
	s.NoBuffer = 2
	for i := 0; i < 100; i++ {
		s.SojournL.Add(int64(i) * 10_000)
	}
	prev := s
	s.Elapsed += int64(time.Second)
	s.OutBytes += 1_250_000 // 10 Mbit in the second second
	s.In += 500
	s.CPU += int64(time.Millisecond)

	v := s.Row(&prev)
	// The link was idle in the interval; 1 ms of CPU over 500 packets is 2 µs each.
	if v.Interval != 1 || v.OutBps != 10e6 || v.Utilisation != 0 || v.CPUPerPkt == nil || *v.CPUPerPkt != 2 || v.SojournL != (MsQuantiles{}) {
		t.Errorf("interval: %v s, %v bit/s, utilisation %v, cpu %v µs/pkt, sojourn L %v; want 1, 10e6, 0, 2, none",
			v.Interval, v.OutBps, v.Utilisation, v.CPUPerPkt, v.SojournL)
	}
	v = s.Row(nil)
	// 1875000 bytes in 2 s; busy 0.5 of 2 s; p99 of 0, 10, ... 990 µs is
	// 980 µs, in the bucket whose upper edge the histogram reports.
	if v.Interval != 2 || v.OutBps != 7.5e6 || v.Utilisation != 0.25 || v.Utilisation != s.Utilisation() {
		t.Errorf("whole run: %v s, %v bit/s, utilisation %v; want 2, 7.5e6, 0.25", v.Interval, v.OutBps, v.Utilisation)
	}
	if v.Dir != "down" || math.Abs(v.Prob-0.25) > 1e-9 || v.DelayCus != 1500 || v.Config.Delay != 10e6 || v.Drops["classic"] != 5 || v.Drops["nobuffer"] != 2 {
		t.Errorf("row %+v", v)
	}
	// p50 of 0, 10, ... 990 µs is 490 µs, in the bucket [119·2^12,
	// 120·2^12) = [487 424, 491 520) ns; p99 is 980 µs, in [119·2^13,
	// 120·2^13) = [974 848, 983 040): each reads its bucket's upper edge,
	// below the measured maximum, 990 µs.
	if v.SojournL != (MsQuantiles{P50: 0.491519, P99: 0.983039, Max: 0.99}) {
		t.Errorf("sojourn L %+v", v.SojournL)
	}
}

// TestStatsRowCPUAndConfig: CPU per packet counts only the intervals that
// read packets (none read: no figure), and the configuration block is the
// one in force, in tc's words.
func TestStatsRowCPUAndConfig(t *testing.T) {
	var s DirStats
	s.Kind, s.Spec, s.Rate, s.Bps, s.Delay = aqm.KindDualPI2, aqm.Spec{Kind: aqm.KindDualPI2, DualPI2: aqm.DefaultConfig()}, "10mbit", 10_000_000, int64(10*time.Millisecond)
	s.Spec.DualPI2.Target = 7_000_000
	s.Loss = "1%"
	s.In, s.CPU, s.IdleCPU = 100, 5_000_000, 4_000_000 // 1 ms busy over 100 packets
	prev := s
	s.CPU += 3_000_000 // an idle interval: CPU spent, no packet read
	s.IdleCPU += 3_000_000
	tests := []struct {
		name string
		prev *DirStats
		want float64 // 0: no figure
	}{{"since start", nil, 10}, {"idle interval", &prev, 0}}
	for _, tt := range tests {
		v := s.Row(tt.prev)
		switch {
		case tt.want == 0 && v.CPUPerPkt != nil:
			t.Errorf("%s: cpu %v µs/pkt, want none", tt.name, *v.CPUPerPkt)
		case tt.want != 0 && (v.CPUPerPkt == nil || *v.CPUPerPkt != tt.want):
			t.Errorf("%s: cpu %v µs/pkt, want %v", tt.name, v.CPUPerPkt, tt.want)
		}
	}
	c := s.Row(nil).Config
	if want := "qdisc dualpi2 limit 10000p memlimit 30000000B target 7ms tupdate 16ms alpha 0.156250 beta 3.195312 step_thresh 1ms min_qlen_step 0p coupling_factor 2 drop_on_overload drop_dequeue classic_protection 10% l4s_ect split_gso"; c.TC != want {
		t.Errorf("tc line\n got %s\nwant %s", c.TC, want)
	}
	// The gains as set beside tc's read-back: 41/256 and 819/256 Hz.
	if c.AlphaHz != 0.16015625 || c.BetaHz != 3.19921875 {
		t.Errorf("gains as set %v, %v; want 0.16015625, 3.19921875", c.AlphaHz, c.BetaHz)
	}
	if c.Link != "rate 10Mbit delay 10ms loss 1%" || c.RateBps != 10e6 || c.Delay != 10e6 || c.Params["target"] != "7ms" || c.Params["l4s_ect"] != true {
		t.Errorf("config %+v", c)
	}
}

// A config row's knobs follow its fields in its JSON object, in their
// order; alpha and beta are the knobs' when they say them, and a knob
// whose key a field has already (delay) is left out.
func TestConfigRowKnobs(t *testing.T) {
	c := ConfigRow{Qdisc: "dualpi2", Rate: "10Mbit", Delay: 5, AlphaHz: 0.15625, BetaHz: 3.2,
		Knobs: []jsonline.Field{{Key: "target", JSON: "15000000"}, {Key: "alpha", JSON: "0.25"}, {Key: "delay", JSON: "7"}, {Key: "overload", JSON: `"drop"`}}}
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"qdisc":"dualpi2","params":null,"tc":"","link":"","rate_bps":0,"rate":"10Mbit","delay":5,"target":15000000,"alpha":0.25,"overload":"drop"}`
	if string(b) != want {
		t.Errorf("config row\n%s\nwant\n%s", b, want)
	}
	c.Knobs = nil
	if b, _ := json.Marshal(c); !strings.Contains(string(b), `"delay":5,"alpha":0.15625,"beta":3.2}`) {
		t.Errorf("config row without knobs %s: want its own alpha and beta", b)
	}
}
