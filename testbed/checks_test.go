package testbed

import (
	"strings"
	"testing"

	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/figure"
	"github.com/pi2hop/pi2hop/testbed/report"
)

func callRun(name string, p99, loss float64) report.Run {
	return report.Run{Name: name, Title: name, BaseRTTMs: 20,
		Call: &report.Call{RTTMs: figure.Summary{N: 100, Min: 20, P99: p99, Max: p99 + 5}, Loss: loss}}
}

// paused sets r's call RTT p99 outside machine pauses over n round trips
// and the share of round trips left out of it.
func paused(r report.Run, p99 float64, n int, share float64) report.Run {
	r.Call.RTTOutsidePausesMs = figure.Summary{N: n, Min: 20, P99: p99, Max: p99 + 1}
	r.Call.PausedShare = share
	return r
}

func passes(cs []report.Check) (pass, fail []string) {
	for _, c := range cs {
		if c.Pass {
			pass = append(pass, c.Name)
		} else {
			fail = append(fail, c.Name)
		}
	}
	return pass, fail
}

func TestChecks(t *testing.T) {
	withQueues := func(r report.Run, l, c float64) report.Run {
		r.Queues = []report.Queue{{Name: "L", SojournMs: figure.Summary{N: 1, P99: l}}, {Name: "C", SojournMs: figure.Summary{N: 1, P99: c}}}
		return r
	}
	zoo := func(fifoP50 float64, docsisL4S float64) report.Report {
		fifo := callRun("fifo-classic", fifoP50+10, 0.01)
		fifo.Call.RTTMs.P50 = fifoP50
		fifo.Setup = RunSpec{Queue: aqm.Spec{Kind: aqm.KindFIFO, FIFO: aqm.FIFOConfig{Limit: 100}}, RateBps: 10_000_000}
		return report.Report{Scenario: "aqm-zoo", Runs: []report.Run{fifo,
			callRun("dualpi2-l4s", 24, 0), callRun("dualpi2-classic", 50, 0.02),
			callRun("docsis-l4s", docsisL4S, 0), callRun("docsis-classic", 44, 0.02)}}
	}
	fellBack := func(r report.Run) report.Run {
		r.Call.ECNValidation, r.Call.ECNFailReason, r.Call.FellBack = "failed", "mangled", true
		return r
	}
	ecnRun := func(title string, ratio float64) report.Run {
		return report.Run{Name: title, Title: title, Fairness: &report.Fairness{Ratio: ratio, Jain: 0.9}}
	}
	tests := []struct {
		name  string
		r     report.Report
		fails []string // names of failing checks, by prefix
	}{
		// 100 packets at 10 Mbit/s drain in 120 ms: the median must be
		// at least 20 + 60 ms.
		{"aqm-zoo good", zoo(80, 24), nil},
		{"aqm-zoo shallow FIFO, DOCSIS L4S no better", zoo(79.9, 44),
			[]string{"FIFO classic call RTT p50 ≥ base RTT + half the FIFO's 120 ms", "DOCSIS LL: L4S call"}},
		{"aqm-zoo missing run", report.Report{Scenario: "aqm-zoo", Runs: zoo(80, 24).Runs[:4]}, []string{"runs complete"}},
		{"classic-ecn", report.Report{Scenario: "classic-ecn", Runs: []report.Run{ecnRun("CoDel-ECN", 2.2), ecnRun("PIE-ECN", 0.9),
			{Title: "empty"}}}, []string{"PIE-ECN: Prague's rate ≥ cubic's", "empty: both flows carried traffic"}},
		{"l4s-demo good", report.Report{Scenario: "l4s-demo", Runs: []report.Run{callRun("dualpi2-l4s", 23, 0.001), callRun("dualpi2-classic", 40, 0.05)}}, nil},
		{"l4s-demo slow L4S call", report.Report{Scenario: "l4s-demo", Runs: []report.Run{callRun("dualpi2-l4s", 30, 0.02), callRun("dualpi2-classic", 40, 0.05)}},
			[]string{"L4S call RTT p99 ≤", "L4S call loss"}},
		{"l4s-demo L4S no better", report.Report{Scenario: "l4s-demo", Runs: []report.Run{callRun("dualpi2-l4s", 24, 0), callRun("dualpi2-classic", 24, 0)}},
			[]string{"L4S call RTT p99 below"}},
		// A noisy machine: its pauses raise the p99 of every round
		// trip; the check holds the ones they left alone.
		{"l4s-demo machine pauses", report.Report{Scenario: "l4s-demo", Runs: []report.Run{paused(callRun("dualpi2-l4s", 25.2, 0), 24.9, 2300, 0.07), callRun("dualpi2-classic", 40, 0.05)}}, nil},
		{"l4s-demo slow outside pauses", report.Report{Scenario: "l4s-demo", Runs: []report.Run{paused(callRun("dualpi2-l4s", 25.2, 0), 25.1, 2300, 0.07), callRun("dualpi2-classic", 40, 0.05)}},
			[]string{"L4S call RTT p99 ≤"}},
		// Judged on what is left when that is at least 500 round trips,
		// whatever share it is.
		{"l4s-demo pauses most of the time", report.Report{Scenario: "l4s-demo", Runs: []report.Run{paused(callRun("dualpi2-l4s", 27.3, 0), 24.9, 500, 0.65), callRun("dualpi2-classic", 40, 0.05)}}, nil},
		{"l4s-demo pauses throughout", report.Report{Scenario: "l4s-demo", Runs: []report.Run{paused(callRun("dualpi2-l4s", 25.2, 0), 23, 499, 0.8), callRun("dualpi2-classic", 40, 0.05)}},
			[]string{"L4S call RTT p99 ≤"}},
		{"l4s-demo pauses unknown", report.Report{Scenario: "l4s-demo", Runs: []report.Run{paused(callRun("dualpi2-l4s", 25.2, 0), 0, 0, -1), callRun("dualpi2-classic", 40, 0.05)}},
			[]string{"L4S call RTT p99 ≤"}},
		{"l4s-demo missing run", report.Report{Scenario: "l4s-demo", Runs: []report.Run{callRun("dualpi2-l4s", 23, 0)}}, []string{"runs complete"}},
		{"l4s-demo L4S call fell back", report.Report{Scenario: "l4s-demo", Runs: []report.Run{fellBack(callRun("dualpi2-l4s", 23, 0)), callRun("dualpi2-classic", 40, 0.05)}},
			[]string{"L4S call never falls back"}},
		{"coexist good", report.Report{Scenario: "coexist", Runs: []report.Run{withQueues(report.Run{Name: "coexist",
			Fairness: &report.Fairness{Ratio: 1.3, Jain: 0.98}}, 1, 15)}}, nil},
		{"coexist unfair, L not shorter", report.Report{Scenario: "coexist", Runs: []report.Run{withQueues(report.Run{Name: "coexist",
			Fairness: &report.Fairness{Ratio: 2.5}}, 16, 15)}}, []string{"rate ratio", "L-queue delay"}},
		{"bdp", report.Report{Scenario: "bdp", BDP: []report.BDPRow{
			{WindowBytes: 17520, RTTMs: 15, LinkBps: 1e8, PredictedBps: 9.344e6, MeasuredBps: 8.5e6, RelErr: 0.09},
			{WindowBytes: 17520, RTTMs: 50, LinkBps: 1e8, PredictedBps: 2.8e6, MeasuredBps: 2.2e6, RelErr: 0.21},
			{WindowBytes: 6553500, RTTMs: 15, LinkBps: 1e8, PredictedBps: 1e8, MeasuredBps: 5e7, RelErr: 0.5},         // link-limited: not checked
			{WindowBytes: 6553500, RTTMs: 120, LinkBps: 1e9, PredictedBps: 4.369e8, MeasuredBps: 2.8e8, RelErr: 0.36}, // 44 % of the link: not checked
		}}, []string{"window 17520 B at 50 ms"}},
		// The Prague bounds: ≥ 97 % and p99 ≤ 2.6 ms at 10 Mbit/s,
		// ≥ 98.5 % and p99 ≤ 1.8 ms at 50 Mbit/s, all inclusive.
		{"prague at the bounds", report.Report{Scenario: "prague", Runs: []report.Run{
			withQueues(report.Run{Name: "prague", RateBps: 10e6, Utilisation: 0.97}, 2.6, 0),
			withQueues(report.Run{Name: "prague-50mbit", RateBps: 50e6, Utilisation: 0.985}, 1.8, 0)}},
			nil},
		{"prague queue", report.Report{Scenario: "prague", Runs: []report.Run{withQueues(report.Run{Name: "prague", RateBps: 10e6, Utilisation: 0.98}, 2.61, 0)}},
			[]string{"L-queue sojourn p99 ≤"}},
		{"prague utilisation", report.Report{Scenario: "prague", Runs: []report.Run{withQueues(report.Run{Name: "prague", RateBps: 10e6, Utilisation: 0.969}, 2.5, 0)}},
			[]string{"Prague utilisation ≥ 97 %"}},
		{"prague at 50 Mbit/s", report.Report{Scenario: "prague", Runs: []report.Run{
			withQueues(report.Run{Name: "prague", RateBps: 10e6, Utilisation: 0.99}, 2.0, 0),
			withQueues(report.Run{Name: "prague-50mbit", RateBps: 50e6, Utilisation: 0.984}, 1.81, 0)}},
			[]string{"Prague utilisation at 50 Mbit/s ≥ 98.5 %", "L-queue sojourn p99 at 50 Mbit/s ≤ 1.8 ms"}},
		// Machine pauses: the figures outside them are judged, when they
		// cover at most half of the time; unknown pauses judge all of it.
		{"prague outside pauses", report.Report{Scenario: "prague", Runs: []report.Run{
			pausedPrague(0.05, 0.6, 9, 0.98, 2.5)}}, nil},
		{"prague outside pauses, the queue", report.Report{Scenario: "prague", Runs: []report.Run{
			pausedPrague(0.05, 0.99, 2.0, 0.98, 2.61)}}, []string{"L-queue sojourn p99 ≤"}},
		{"prague outside pauses, the utilisation", report.Report{Scenario: "prague", Runs: []report.Run{
			pausedPrague(0.5, 0.99, 2.0, 0.969, 2.5)}}, []string{"Prague utilisation ≥ 97 %"}},
		{"prague paused most of the time", report.Report{Scenario: "prague", Runs: []report.Run{
			pausedPrague(0.51, 0.99, 2.0, 0.99, 2.0)}}, []string{"Prague utilisation ≥ 97 %", "L-queue sojourn p99 ≤"}},
		{"prague, pauses unknown", report.Report{Scenario: "prague", Runs: []report.Run{
			pausedPrague(-1, 0.969, 2.0, 0.99, 2.0)}}, []string{"Prague utilisation ≥ 97 %"}},
		// A rate of the user's has no stated bound: the run at 10 Mbit/s
		// is still judged, the other is not.
		{"prague at a rate of the user's", report.Report{Scenario: "prague", Runs: []report.Run{
			withQueues(report.Run{Name: "prague", RateBps: 10e6, Utilisation: 0.99}, 2.0, 0),
			withQueues(report.Run{Name: "prague-20mbit", RateBps: 20e6, Utilisation: 0.5}, 9, 0)}},
			nil},
		{"failed run", report.Report{Scenario: "coexist", Runs: []report.Run{withQueues(report.Run{Name: "coexist", Title: "C", Error: "boom",
			Fairness: &report.Fairness{Ratio: 1}}, 1, 15)}}, []string{"C ran"}},
	}
	for _, tt := range tests {
		cs := checks(&tt.r)
		_, fail := passes(cs)
		if len(fail) != len(tt.fails) {
			t.Errorf("%s: failing %q, want %q", tt.name, fail, tt.fails)
			continue
		}
		for i := range fail {
			if !strings.HasPrefix(fail[i], tt.fails[i]) {
				t.Errorf("%s: failing %q, want %q", tt.name, fail, tt.fails)
			}
		}
		if len(cs) == 0 {
			t.Errorf("%s: no checks", tt.name)
		}
	}
}

func TestAppleComparison(t *testing.T) {
	r := &report.Report{Scenario: "l4s-demo", Runs: []report.Run{callRun("dualpi2-l4s", 23, 0), callRun("dualpi2-classic", 40, 0.05), callRun("fifo-classic", 130, 0.02)}}
	tb := appleComparison(r)
	if len(tb.Header) != 6 || tb.Header[3] != "dualpi2-classic" || tb.Header[5] != "dualpi2-l4s" {
		t.Errorf("header %q: want Apple's two columns, then classic, FIFO, L4S", tb.Header)
	}
	if len(tb.Rows) != 5 || tb.Rows[1][1] != "up to ~45 ms" || tb.Rows[1][5] != "23.0 / 28 ms" {
		t.Errorf("rows %q", tb.Rows)
	}
}

// TestECNFaultChecks: with validation on, a detectable fault must be
// detected and no fault must never make the call fall back; runs without
// validation and faults validation cannot see are not judged, but for a
// naive call through drop-ect, whose death (its sender's error, no round
// trip) is the fault's effect and no failed run.
func TestECNFaultChecks(t *testing.T) {
	run := func(title, fault, state, reason string, fellBack bool) report.Run {
		return report.Run{Title: title, ECNFault: fault, Call: &report.Call{ECN: "l4s", ECNValidation: state, ECNFailReason: reason, FellBack: fellBack}}
	}
	r := &report.Report{Scenario: "ecn-faults", Runs: []report.Run{
		run("none", "none", "capable", "", false),
		run("none, false positive", "none", "failed", "re-marked", true),
		run("bleach", "bleach", "failed", "bleached", true),
		run("ect1-to-ect0 after, missed", "ect1-to-ect0,after", "capable", "", false),
		run("mangle", "mangle", "failed", "mangled", true),
		run("ce-bleach after", "ce-bleach,after", "capable", "", false), // not detectable: no check
		run("bleach, validation off", "bleach", "off", "", false),       // naive: no check
		run("ect0-to-ect1", "ect0-to-ect1", "capable", "", false),       // leaves ECT(1) alone: no check
		run("drop-ect, validation off", "drop-ect", "off", "", false),
		run("drop-ect, validation off, got through", "drop-ect", "off", "", false),
	}}
	r.Runs[8].Error = "call sender: video-send: no ACK for 4 s"
	r.Runs[9].Call.RTTMs.N = 10
	pass, fail := passes(checks(r))
	wantPass := []string{"none: the call never falls back", "bleach: validation detects the fault", "mangle: validation detects the fault",
		"drop-ect, validation off: nothing the naive call sends gets through"}
	wantFail := []string{"none, false positive: the call never falls back", "ect1-to-ect0 after, missed: validation detects the fault",
		"drop-ect, validation off, got through: nothing the naive call sends gets through"}
	if strings.Join(pass, "|") != strings.Join(wantPass, "|") || strings.Join(fail, "|") != strings.Join(wantFail, "|") {
		t.Errorf("pass %q fail %q; want pass %q fail %q", pass, fail, wantPass, wantFail)
	}
}

// pausedPrague is a Prague-alone run at 10 Mbit/s whose machine paused
// for share of the time, with its utilisation and L-queue p99 over all of
// it and outside the pauses.
func pausedPrague(share, util, lP99, utilOut, lP99Out float64) report.Run {
	return report.Run{Name: "prague", RateBps: 10e6, PausedTimeShare: share, Utilisation: util, UtilisationOutsidePauses: utilOut,
		Queues: []report.Queue{{Name: "L", SojournMs: figure.Summary{N: 1, P99: lP99}, SojournOutsidePausesMs: figure.Summary{N: 1, P99: lP99Out}}}}
}
