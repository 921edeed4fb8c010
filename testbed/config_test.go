package testbed

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/flow"
)

func TestResolveDefaults(t *testing.T) {
	tests := []struct {
		in       Config
		runs     int
		rate     uint64
		duration time.Duration
	}{
		{Config{}, 3, 10_000_000, 45 * time.Second}, // the default scenario
		{Config{Scenario: "l4s-demo", Quick: true}, 3, 10_000_000, 20 * time.Second},
		{Config{Scenario: "coexist"}, 1, 10_000_000, 45 * time.Second},
		{Config{Scenario: "bdp"}, 6, 1_000_000_000, 10 * time.Second},
		{Config{Scenario: "bdp", Quick: true}, 3, 100_000_000, 5 * time.Second},
		{Config{Scenario: "bdp", RateBps: 50_000_000, RTTs: []time.Duration{15 * time.Millisecond}}, 2, 50_000_000, 10 * time.Second},
		{Config{Scenario: "prague", Duration: 8 * time.Second}, 2, 10_000_000, 8 * time.Second}, // 10 and 50 Mbit/s
		{Config{Scenario: "prague", Quick: true}, 1, 10_000_000, 12 * time.Second},
		{Config{Scenario: "prague", RateBps: 20_000_000}, 1, 20_000_000, 30 * time.Second},
		{Config{Scenario: "ecn-faults"}, 24, 10_000_000, 30 * time.Second},
		{Config{Scenario: "ecn-faults", Quick: true}, 3, 10_000_000, 8 * time.Second},
	}
	for _, tt := range tests {
		c, err := tt.in.Resolve()
		if err != nil {
			t.Errorf("%+v: %v", tt.in, err)
			continue
		}
		runs := c.Runs()
		if len(runs) != tt.runs || c.RateBps != tt.rate || c.Duration != tt.duration {
			t.Errorf("%s: %d runs at %d bit/s for %v, want %d at %d for %v", c.Scenario, len(runs), c.RateBps, c.Duration, tt.runs, tt.rate, tt.duration)
		}
		names := map[string]bool{}
		for _, r := range runs {
			if names[r.Name] || strings.ContainsAny(r.Name, " /") {
				t.Errorf("%s: run name %q repeated or not file-name safe", c.Scenario, r.Name)
			}
			names[r.Name] = true
			if r.Warmup >= r.Duration || len(r.Flows) == 0 {
				t.Errorf("%s/%s: warm-up %v of %v, %d flows", c.Scenario, r.Name, r.Warmup, r.Duration, len(r.Flows))
			}
		}
	}
}

func TestL4SDemoRuns(t *testing.T) {
	c, _ := Config{Scenario: "l4s-demo", Bulk: 2, FIFOLimit: 50}.Resolve()
	runs := c.Runs()
	want := []struct {
		name, kind, callECN string
	}{
		{"dualpi2-l4s", aqm.KindDualPI2, flow.ECNL4S},
		{"dualpi2-classic", aqm.KindDualPI2, flow.ECNClassic},
		{"fifo-classic", aqm.KindFIFO, flow.ECNClassic},
	}
	for i, w := range want {
		r := runs[i]
		if r.Name != w.name || r.Queue.Kind != w.kind || r.Flows[0].Kind != KindVideo || r.Flows[0].ECN != w.callECN || len(r.Flows) != 3 {
			t.Errorf("run %d: %s %s call %s/%s, %d flows; want %s %s call video/%s, 3 flows",
				i, r.Name, r.Queue.Kind, r.Flows[0].Kind, r.Flows[0].ECN, len(r.Flows), w.name, w.kind, w.callECN)
		}
		if r.Queue.Kind == aqm.KindDualPI2 && r.Queue.DualPI2.MinQlenStep != DefaultMinQlenStep {
			t.Errorf("%s: min_qlen_step %d, want the lab's %d", r.Name, r.Queue.DualPI2.MinQlenStep, DefaultMinQlenStep)
		}
		if r.RTT != 20*time.Millisecond || r.RateBps != 10_000_000 {
			t.Errorf("%s: %v at %d bit/s, want 20ms at 10mbit", r.Name, r.RTT, r.RateBps)
		}
	}
	if runs[2].Queue.FIFO.Limit != 50 {
		t.Errorf("FIFO limit %d, want the --fifo-limit 50", runs[2].Queue.FIFO.Limit)
	}
}

// The prague scenario keeps the kernel's min_qlen_step 0 (its bounds are
// udp_prague's at kernel defaults) unless asked otherwise; the
// others take the lab's 1.
func TestPragueScenarioMinQlenStep(t *testing.T) {
	one := uint32(1)
	for _, tc := range []struct {
		cfg  Config
		want uint32
	}{
		{Config{Scenario: "prague"}, 0},
		{Config{Scenario: "prague", Quick: true}, 0},
		{Config{Scenario: "prague", MinQlenStep: &one}, 1},
		{Config{Scenario: "coexist"}, DefaultMinQlenStep},
	} {
		c, err := tc.cfg.Resolve()
		if err != nil {
			t.Fatal(err)
		}
		if got := c.Runs()[0].Queue.DualPI2.MinQlenStep; got != tc.want || *c.MinQlenStep != tc.want {
			t.Errorf("%s (quick %v, flag %v): min_qlen_step %d, want %d", tc.cfg.Scenario, tc.cfg.Quick, tc.cfg.MinQlenStep != nil, got, tc.want)
		}
	}
}

func TestResolveRejects(t *testing.T) {
	tests := []struct {
		in   Config
		want string
	}{
		{Config{Scenario: "nope"}, `scenario "nope": want one of l4s-demo, aqm-zoo, bdp, classic-ecn, coexist, ecn-faults, prague, wifi`},
		{Config{RateBps: 1000}, "want at least 100kbit"},
		{Config{Duration: 3 * time.Second}, "warm-up 5s: want 0 <= warm-up < duration (3s)"},
		{Config{Bulk: 40}, "bulk 40: want 0..32"},
		{Config{Scenario: "bdp", Windows: []uint64{100}}, "window 100 bytes"},
		{Config{Scenario: "bdp", RTTs: []time.Duration{-time.Second}}, "rtts -1s"},
	}
	for _, tt := range tests {
		if _, err := tt.in.Resolve(); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%+v: error %v, want it to contain %q", tt.in, err, tt.want)
		}
	}
}

func TestConfigJSON(t *testing.T) {
	c, _ := Config{Scenario: "bdp", Quick: true, Windows: []uint64{17_520, 6_553_500}}.Resolve()
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"scenario":"bdp"`, `"quick":true`, `"rate":"100 Mbit/s"`, `"duration":"5s"`,
		`"rtts":["15ms","50ms","120ms"]`, `"windows":[17520,6553500]`, `"min_qlen_step":1`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("config JSON %s lacks %s", b, want)
		}
	}
	if strings.Contains(string(b), "_ns") {
		t.Errorf("config JSON %s has raw nanoseconds beside the readable durations", b)
	}
}

func TestConfigString(t *testing.T) {
	tests := []struct {
		in   Config
		want string
	}{
		{Config{Scenario: "coexist", Quick: true}, "coexist: 10 Mbit/s, RTT 20ms, 15s per run (warm-up 5s)"},
		{Config{Scenario: "bdp"}, "bdp: 1 Gbit/s, RTTs 15ms 50ms 120ms, windows 17520 6553500 B, 10s per run (warm-up 2s)"},
	}
	for _, tt := range tests {
		c, _ := tt.in.Resolve()
		if got := c.String(); got != tt.want {
			t.Errorf("String() = %q, want %q", got, tt.want)
		}
	}
}

func TestConfigRepeat(t *testing.T) {
	one, err := Config{}.Resolve()
	if err != nil || one.Repeat != 1 {
		t.Fatalf("default repeat %d (err %v), want 1", one.Repeat, err)
	}
	three, _ := Config{Repeat: 3}.Resolve()
	if got, want := three.PlannedDuration(), 3*one.PlannedDuration(); got != want {
		t.Errorf("planned with repeat 3: %v, want 3 x %v", got, one.PlannedDuration())
	}
	for _, n := range []int{-1, maxRepeat + 1} {
		if _, err := (Config{Repeat: n}).Resolve(); err == nil {
			t.Errorf("repeat %d accepted", n)
		}
	}
}

// TestPragueRates: the prague scenario runs at 10 and 50 Mbit/s (the two
// rates with reference bounds), --quick at 10 only, and a --rate of the user's alone.
func TestPragueRates(t *testing.T) {
	for _, tt := range []struct {
		in    Config
		rates []float64
		names []string
	}{
		{Config{Scenario: "prague"}, []float64{10e6, 50e6}, []string{"prague", "prague-50mbit"}},
		{Config{Scenario: "prague", Quick: true}, []float64{10e6}, []string{"prague"}},
		{Config{Scenario: "prague", RateBps: 20_000_000}, []float64{20e6}, []string{"prague"}},
		{Config{Scenario: "prague", Rates: []uint64{10_000_000, 500_000}}, []float64{10e6, 5e5}, []string{"prague", "prague-500kbit"}},
	} {
		c, err := tt.in.Resolve()
		if err != nil {
			t.Fatal(err)
		}
		var rates []float64
		var names []string
		for _, r := range c.Runs() {
			rates, names = append(rates, float64(r.RateBps)), append(names, r.Name)
		}
		if !slices.Equal(rates, tt.rates) || !slices.Equal(names, tt.names) {
			t.Errorf("%+v: runs %v at %v bit/s, want %v at %v", tt.in, names, rates, tt.names, tt.rates)
		}
	}
}
