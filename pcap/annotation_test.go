package pcap

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/shaper"
)

func TestCommentRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		ann  Annotation
		text string
	}{
		{Annotation{Class: aqm.L4S, Sojourn: 1_234_000, Prob: 220_000_000, ECNIn: aqm.ECT1, HasDecision: true,
			Verdict: aqm.Verdict{Action: aqm.Mark, Reason: aqm.ReasonStep}},
			"pi2hop: queue=L ecn-in=ECT(1) sojourn=1.234000ms prob=0.051223 verdict=marked reason=step"},
		{Annotation{Class: aqm.Classic, Sojourn: 7, Prob: math.MaxUint32, ECNIn: aqm.NotECT, HasDecision: true,
			Verdict: aqm.Verdict{Action: aqm.Drop, Reason: aqm.ReasonClassic}},
			"pi2hop: queue=C ecn-in=Not-ECT sojourn=0.000007ms prob=1.000000 verdict=dropped reason=classic"},
		{Annotation{Class: aqm.Classic, Sojourn: 12_000_000_123, ECNIn: aqm.CE, HasDecision: true},
			"pi2hop: queue=C ecn-in=CE sojourn=12000.000123ms prob=0.000000 verdict=sent reason=none"},
		{Annotation{Class: aqm.L4S, ECNIn: aqm.ECT0},
			"pi2hop: queue=L ecn-in=ECT(0)"},
		// The other qdiscs' reasons, and Verdict.Sub (fq_codel's flow
		// number; codel's drop state).
		{Annotation{Class: aqm.Classic, Sojourn: 20_000_000, ECNIn: aqm.ECT0, HasDecision: true,
			Verdict: aqm.Verdict{Action: aqm.Mark, Reason: aqm.ReasonCodel, Sub: 3}},
			"pi2hop: queue=C ecn-in=ECT(0) sojourn=20.000000ms prob=0.000000 verdict=marked reason=codel sub=3"},
		{Annotation{Class: aqm.Classic, Sojourn: 1000, ECNIn: aqm.ECT1, HasDecision: true,
			Verdict: aqm.Verdict{Action: aqm.Pass, Reason: aqm.ReasonSanction}},
			"pi2hop: queue=C ecn-in=ECT(1) sojourn=0.001000ms prob=0.000000 verdict=sent reason=sanction"},
		// An ECN path fault: its kind and the codepoint before and after.
		{Annotation{Class: aqm.L4S, Sojourn: 120_000, ECNIn: aqm.ECT1, HasDecision: true,
			Verdict: aqm.Verdict{Action: aqm.Mark, Reason: aqm.ReasonStep}, Fault: shaper.FaultCEBleach, FaultFrom: aqm.CE, FaultTo: aqm.ECT1},
			"pi2hop: queue=L ecn-in=ECT(1) sojourn=0.120000ms prob=0.000000 verdict=marked reason=step fault=ce-bleach ecn=CE->ECT(1)"},
		{Annotation{Class: aqm.Classic, ECNIn: aqm.ECT0, HasDecision: true,
			Verdict: aqm.Verdict{Action: aqm.Drop, Reason: aqm.ReasonFault}, Fault: shaper.FaultDropECT, FaultFrom: aqm.ECT0, FaultTo: aqm.ECT0},
			"pi2hop: queue=C ecn-in=ECT(0) sojourn=0.000000ms prob=0.000000 verdict=dropped reason=ecn_fault fault=drop-ect ecn=ECT(0)->ECT(0)"},
	} {
		got := string(AppendComment(nil, &tc.ann))
		if got != tc.text {
			t.Errorf("AppendComment = %q, want %q", got, tc.text)
		}
		back, err := ParseComment(got)
		if err != nil {
			t.Fatalf("ParseComment(%q): %v", got, err)
		}
		want := tc.ann
		want.Verdict.Class = want.Class
		// prob has six decimals: within 1e-6 of p', not bit-exact.
		if d := math.Abs(float64(back.Prob) - float64(want.Prob)); d > 1e-6*math.MaxUint32 {
			t.Errorf("%q: prob %d, want %d", got, back.Prob, want.Prob)
		}
		back.Prob = want.Prob
		if back != want {
			t.Errorf("ParseComment(%q) = %+v, want %+v", got, back, want)
		}
	}
}

func TestParseCommentErrors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"hello", "not a pi2hop annotation"},
		{"pi2hop: ecn-in=CE", "no queue="},
		{"pi2hop: queue=X", "want C or L"},
		{"pi2hop: queue=L ecn-in=ECT(2)", "want Not-ECT"},
		{"pi2hop: queue=L sojourn=3s verdict=sent", "want milliseconds"},
		{"pi2hop: queue=L sojourn=1.5ms", "without verdict"},
		{"pi2hop: queue=L sojourn=1.5ms verdict=lost", "want sent, marked or dropped"},
		{"pi2hop: queue=L prob=1.5", "want 0..1"},
		{"pi2hop: queue=L verdict=sent reason=bored", "unknown reason"},
		{"pi2hop: queue=L junk", "not key=value"},
		{"pi2hop: queue=L verdict=sent fault=melt", "want a fault kind"},
		{"pi2hop: queue=L verdict=sent fault=bleach ecn=CE", "want FROM->TO"},
		{"pi2hop: queue=L verdict=sent fault=bleach ecn=CE->ECT(3)", "want Not-ECT"},
	} {
		_, err := ParseComment(tc.in)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseComment(%q) error %v, want one containing %q", tc.in, err, tc.want)
		}
	}
	if _, err := ParseComment("a user's note"); !errors.Is(err, errNotOurs) {
		t.Errorf("foreign comment: %v, want errNotOurs", err)
	}
	// Fields added later are ignored, not errors.
	if a, err := ParseComment("pi2hop: queue=L future=42"); err != nil || a.Class != aqm.L4S {
		t.Errorf("unknown key: %+v, %v", a, err)
	}
}
