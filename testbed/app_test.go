package testbed

import (
	"strings"
	"testing"
	"time"

	"github.com/pi2hop/pi2hop/figure"
	"github.com/pi2hop/pi2hop/testbed/report"
)

func TestBuiltinAppVariants(t *testing.T) {
	tests := []struct {
		name, rate string
		bps        uint64
		flags      string
	}{
		{VariantL4S, "10mbit", 10_000_000, "--aqm=dualpi2"},
		{VariantClassic, "10mbit", 10_000_000, "--aqm=dualpi2 --ecn-fault=bleach"},
		// 100 ms at 10 Mbit/s is 1 Mbit, 125 000 bytes; at 1 Gbit/s 12.5 MB.
		{VariantFIFO, "10mbit", 10_000_000, "--aqm=fifo --memlimit=125000"},
		{VariantFIFO, "1gbit", 1_000_000_000, "--aqm=fifo --memlimit=12500000"},
		// Two full-size packets at least, however slow the link.
		{VariantFIFO, "100kbit", 100_000, "--aqm=fifo --memlimit=3000"},
	}
	for _, tt := range tests {
		flags, _, ok := BuiltinAppVariant(tt.name, tt.bps)
		if !ok || flags != tt.flags {
			t.Errorf("%s at %s: %q, %v; want %q", tt.name, tt.rate, flags, ok, tt.flags)
		}
	}
	if _, _, ok := BuiltinAppVariant("docsis", 1e7); ok {
		t.Error("docsis is no built-in variant")
	}
}

func TestAppConfigResolve(t *testing.T) {
	v := []AppVariant{{Name: "l4s"}}
	c, err := AppConfig{Client: "true", Server: "true", Variants: v}.Resolve()
	if err != nil || c.RateBps != DefaultAppRate || c.RTT != DefaultAppRTT || c.Duration != DefaultAppDuration ||
		c.Warmup != DefaultAppWarmup || c.Repeat != 1 {
		t.Fatalf("defaults: %+v, %v", c, err)
	}
	bad := []struct {
		c    AppConfig
		want string
	}{
		{AppConfig{Client: " ", Server: "x", Variants: v}, "no client command"},
		{AppConfig{Client: "x", Server: "y", NAT: true, Variants: v}, "not both"},
		{AppConfig{Client: "x", Server: "y"}, "no variants"},
		{AppConfig{Client: "x", Server: "y", Variants: v, Cross: 33}, "cross 33"},
		{AppConfig{Client: "x", Server: "y", Variants: v, Cross: -1}, "cross -1"},
		{AppConfig{Client: "x", Server: "y", Variants: v, Duration: time.Millisecond}, "duration"},
		{AppConfig{Client: "x", Server: "y", Variants: []AppVariant{{Name: "a"}, {Name: "a"}}}, `variant "a" twice`},
		{AppConfig{Client: "x", Server: "y", Variants: []AppVariant{{Name: "A/B"}}}, "variant name"},
	}
	for _, tt := range bad {
		if _, err := tt.c.Resolve(); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%+v: error %v, want one with %q", tt.c, err, tt.want)
		}
	}
}

// appReport is a report of the l4s and classic variants with the app's
// codepoints and RTT p99s given.
func appReport(l4sSent, classicSent, classicRecv report.ECNPackets, fellBack int, l4sP99, classicP99 float64) *report.Report {
	run := func(name string, sent, recv report.ECNPackets, fb int, p99 float64) report.Run {
		a := &report.App{Sent: sent, ClientSent: sent, Received: recv, FellBack: fb}
		if p99 > 0 {
			a.RTTMs = &figure.Summary{N: 100, P99: p99}
		}
		return report.Run{Name: name, App: a}
	}
	return &report.Report{Runs: []report.Run{
		run(VariantL4S, l4sSent, l4sSent, 0, l4sP99),
		run(VariantClassic, classicSent, classicRecv, fellBack, classicP99),
	}}
}

func TestAppFindings(t *testing.T) {
	ect1 := report.ECNPackets{ECT1: 990, CE: 10}
	notECT := report.ECNPackets{NotECT: 1000}
	tests := []struct {
		name string
		r    *report.Report
		want []string // the answers, in order
	}{
		// ping -Q 1: keeps sending ECT(1), which the bleacher turns to Not-ECT.
		{"no validation", appReport(ect1, ect1, notECT, 0, 21, 40), []string{"yes", "yes", "no"}},
		// A validating app switches to Not-ECT once it sees the bleaching.
		{"falls back", appReport(ect1, report.ECNPackets{ECT1: 20, NotECT: 980}, notECT, 1, 21, 40), []string{"yes", "yes", "yes"}},
		// A flow that changed codepoint counts even while most of the
		// packets were still ECT(1) (a late fallback).
		{"late fallback", appReport(ect1, ect1, notECT, 1, 21, 40), []string{"yes", "yes", "yes"}},
		// Fewer ECT(1) packets without a flow that changed is no fallback
		// (a server that reflects the bleached codepoint, as ping's does).
		{"reflected", appReport(ect1, report.ECNPackets{ECT1: 500, NotECT: 500}, notECT, 0, 21, 40), []string{"yes", "yes", "no"}},
		// A classic app: nothing to fall back from.
		{"classic app", appReport(notECT, notECT, notECT, 0, 45, 44), []string{"no", "no", "not applicable"}},
		{"no RTT", appReport(ect1, ect1, notECT, 0, 0, 40), []string{"yes", "unknown", "no"}},
	}
	for _, tt := range tests {
		fs := appFindings(tt.r)
		var got []string
		for _, f := range fs {
			got = append(got, f.Answer)
		}
		if strings.Join(got, ",") != strings.Join(tt.want, ",") {
			t.Errorf("%s: answers %v, want %v (%+v)", tt.name, got, tt.want, fs)
		}
	}
}

func TestCompleteRuns(t *testing.T) {
	ok := report.Run{App: &report.App{}}
	failed := report.Run{App: &report.App{Client: report.AppExit{Failed: true, Code: 1}}}
	broken := report.Run{Error: "topology: no"}
	runs, excluded := completeRuns([]report.Run{ok, failed, ok, broken})
	if len(runs) != 2 || strings.Join(excluded, ",") != "2,4" {
		t.Errorf("kept %d, excluded %v; want 2 kept, 2 and 4 excluded", len(runs), excluded)
	}
	// None ran to the end: all are kept, so the report shows how.
	runs, excluded = completeRuns([]report.Run{failed, broken})
	if len(runs) != 2 || len(excluded) != 0 {
		t.Errorf("all failed: kept %d, excluded %v", len(runs), excluded)
	}
}
