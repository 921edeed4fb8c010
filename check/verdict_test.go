package check

import (
	"strings"
	"testing"

	"github.com/pi2hop/pi2hop/aqm"
)

// arrival is how many of a train sent as one codepoint arrived as
// another, and how many of those with a zero TOS byte.
type arrival struct {
	sent, got aqm.ECN
	n, zero   int
}

// table builds a direction's table: 10 probes sent per codepoint, what
// arrived as listed.
func table(as ...arrival) Table {
	var t Table
	for _, s := range order {
		t.Sent[s] = 10
	}
	for _, a := range as {
		t.Arrived[a.sent][a.got] += a.n
		t.TOSZero[a.sent][a.got] += a.zero
	}
	return t
}

// clean is every train arriving as sent, but for the codepoints in skip.
func clean(skip ...aqm.ECN) []arrival {
	var as []arrival
	for _, s := range order {
		if !containsECN(skip, s) {
			as = append(as, arrival{s, s, 10, 0})
		}
	}
	return as
}

func containsECN(es []aqm.ECN, e aqm.ECN) bool {
	for _, x := range es {
		if x == e {
			return true
		}
	}
	return false
}

// Each fault kind from a table worked out by hand from the valid
// transitions (Not-ECT→Not-ECT; ECT(x)→ECT(x) or CE; CE→CE).
func TestJudge(t *testing.T) {
	const (
		N  = aqm.NotECT
		E0 = aqm.ECT0
		E1 = aqm.ECT1
		CE = aqm.CE
	)
	for _, c := range []struct {
		name   string
		t      Table
		want   string
		detail string // in the headline fault's detail
		faults int
	}{
		{"all as sent", table(clean()...), Passes, "", 0},
		{"some ECT marked CE by an AQM", table(append(clean(E0, E1), arrival{E0, E0, 7, 0}, arrival{E0, CE, 3, 0}, arrival{E1, CE, 6, 0}, arrival{E1, E1, 4, 0})...), Passes, "", 0},
		{"equal loss in every train", table(arrival{N, N, 8, 0}, arrival{E0, E0, 8, 0}, arrival{E1, E1, 7, 0}, arrival{CE, CE, 9, 0}), Passes, "", 0},
		{"ECN field cleared, DSCP kept",
			table(arrival{N, N, 10, 0}, arrival{E0, N, 10, 0}, arrival{E1, N, 10, 0}, arrival{CE, N, 10, 0}),
			Bleached, "ECT(0) arrived as Not-ECT: 10 of 10", 3},
		{"only ECT(1) bleached",
			table(append(clean(E1), arrival{E1, N, 10, 0})...),
			Bleached, "ECT(1) arrived as Not-ECT: 10 of 10", 1},
		{"whole TOS byte zeroed",
			table(arrival{N, N, 10, 10}, arrival{E0, N, 10, 10}, arrival{E1, N, 10, 10}, arrival{CE, N, 10, 10}),
			ToSZeroed, "ECT(0) arrived as Not-ECT with DSCP 0: 10 of 10", 3},
		{"DSCP zeroed, ECN kept", table(arrival{N, N, 10, 10}, arrival{E0, E0, 10, 0}, arrival{E1, E1, 10, 0}, arrival{CE, CE, 10, 0}), Passes, "", 0},
		{"CE to Not-ECT only",
			table(append(clean(CE), arrival{CE, N, 10, 0})...),
			CEBleached, "CE arrived as Not-ECT: 10 of 10", 1},
		{"CE to ECT(0)",
			table(append(clean(CE), arrival{CE, E0, 10, 0})...),
			CEBleached, "CE arrived as ECT(0): 10 of 10", 1},
		{"ECT(1) re-marked ECT(0)",
			table(append(clean(E1), arrival{E1, E0, 10, 0})...),
			ECT1ToECT0, "ECT(1) arrived as ECT(0): 10 of 10", 1},
		{"ECT(1) re-marked, some marked CE after",
			table(append(clean(E1), arrival{E1, E0, 8, 0}, arrival{E1, CE, 2, 0})...),
			ECT1ToECT0, "ECT(1) arrived as ECT(0): 8 of 10", 1},
		{"ECT(1) dropped",
			table(clean(E1)...),
			ECTDropped, "ECT(1): 10 of 10 lost, Not-ECT: 0 of 10", 1},
		{"every ECN-capable train dropped",
			table(clean(E0, E1, CE)...),
			ECTDropped, "ECT(0): 10 of 10 lost", 3},
		{"half the ECT(0) lost, Not-ECT intact",
			table(append(clean(E0), arrival{E0, E0, 5, 0})...),
			ECTDropped, "ECT(0): 5 of 10 lost", 1},
		{"heavy loss alike: not ECT dropped",
			table(arrival{N, N, 4, 0}, arrival{E0, E0, 3, 0}, arrival{E1, E1, 4, 0}, arrival{CE, CE, 5, 0}),
			Passes, "", 0},
		{"Not-ECT made ECT(0)",
			table(append(clean(N), arrival{N, E0, 10, 0})...),
			Mangled, "Not-ECT arrived as ECT(0): 10 of 10", 1},
		{"Not-ECT marked CE",
			table(append(clean(N), arrival{N, CE, 1, 0}, arrival{N, N, 9, 0})...),
			Mangled, "Not-ECT arrived as CE: 1 of 10", 1},
		{"ECT(0) made ECT(1)",
			table(append(clean(E0), arrival{E0, E1, 10, 0})...),
			Mangled, "ECT(0) arrived as ECT(1): 10 of 10", 1},
		{"every ECT probe CE",
			table(append(clean(E0, E1), arrival{E0, CE, 10, 0}, arrival{E1, CE, 10, 0})...),
			Mangled, "every ECT probe arrived as CE: 20 of 20", 1},
		{"nothing came", table(), NoneCame, "all 40 probes lost", 1},
		{"bleached and ECT(1) re-marked: bleaching first",
			table(arrival{N, N, 10, 0}, arrival{E0, N, 10, 0}, arrival{E1, E0, 10, 0}, arrival{CE, CE, 10, 0}),
			Bleached, "ECT(0) arrived as Not-ECT", 2},
		{"ECT(0) dropped and ECT(1) bleached: dropping first",
			table(arrival{N, N, 10, 0}, arrival{E1, N, 10, 0}, arrival{CE, CE, 10, 0}),
			ECTDropped, "ECT(0): 10 of 10 lost", 2},
	} {
		v := Judge(c.t)
		if v.Kind != c.want || len(v.Faults) != c.faults {
			t.Errorf("%s: verdict %q with %d faults %v, want %q with %d", c.name, v.Kind, len(v.Faults), v.Faults, c.want, c.faults)
			continue
		}
		if c.faults > 0 && !strings.Contains(v.Faults[0].Detail, c.detail) {
			t.Errorf("%s: headline detail %q, want it to contain %q", c.name, v.Faults[0].Detail, c.detail)
		}
		if c.faults > 0 && v.Faults[0].Kind != v.Kind {
			t.Errorf("%s: headline fault %q is not the verdict %q", c.name, v.Faults[0].Kind, v.Kind)
		}
	}
}

// The verdict follows the fault kinds' precedence whatever order the
// faults were found in.
func TestVerdictOrder(t *testing.T) {
	v := verdict([]Fault{{Mangled, "m"}, {CEBleached, "c"}, {ECTDropped, "d"}, {ECT1ToECT0, "r"}})
	var got []string
	for _, f := range v.Faults {
		got = append(got, f.Kind)
	}
	if want := []string{ECTDropped, CEBleached, ECT1ToECT0, Mangled}; strings.Join(got, ",") != strings.Join(want, ",") || v.Kind != ECTDropped {
		t.Errorf("verdict %q, faults %v, want %q first and order %v", v.Kind, got, ECTDropped, want)
	}
}
