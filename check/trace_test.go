package check

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/pi2hop/pi2hop/aqm"
)

func TestTraceWhere(t *testing.T) {
	a := func(s string) netip.Addr { return netip.MustParseAddr(s) }
	const e1 = ProbeDSCP<<2 | uint8(aqm.ECT1)
	for _, c := range []struct {
		name    string
		hops    []Hop
		reached bool
		changed int
		where   string
	}{
		{"clean", []Hop{{N: 1, Addr: a("10.0.0.1"), TOS: e1}, {N: 2, Addr: a("10.0.1.2"), Responder: true, TOS: e1}}, true, -1, "arrived at every hop"},
		{"marked CE on the way: valid", []Hop{{N: 1, Addr: a("10.0.0.1"), TOS: e1}, {N: 2, Addr: a("10.0.1.2"), Responder: true, TOS: 0x2b}}, true, -1, "as sent (or marked CE)"},
		{"changed at hop 3 behind a silent one",
			[]Hop{{N: 1, Addr: a("10.0.0.1"), TOS: e1}, {N: 2, Silent: true}, {N: 3, Addr: a("10.0.3.1"), TOS: 0x28}},
			false, 2, "on arrival at hop 3 (10.0.3.1), after hop 1 (10.0.0.1), which saw it as sent; the hops between are silent"},
		{"re-marked ECT(0) at the first hop", []Hop{{N: 1, Addr: a("10.0.0.1"), TOS: 0x2a}}, false, 0, "ECT(1) changed to ECT(0) on arrival at hop 1 (10.0.0.1)"},
		// A pi2hop gateway answers twice from its LAN address: as it
		// took the probe in and as its queue let it out.
		{"changed inside a box that forwards twice",
			[]Hop{{N: 1, Addr: a("10.0.0.1"), TOS: e1}, {N: 2, Addr: a("10.0.1.2"), TOS: e1}, {N: 3, Addr: a("10.0.1.2"), TOS: 0x28},
				{N: 4, Addr: a("10.0.2.2"), TOS: 0x28}},
			false, 2, "ECT(1) changed to Not-ECT inside 10.0.1.2, which answered as hop 2 with the field as sent and as hop 3 with it changed"},
		{"the same address around a silent hop: named as usual",
			[]Hop{{N: 1, Addr: a("10.0.1.2"), TOS: e1}, {N: 2, Silent: true}, {N: 3, Addr: a("10.0.1.2"), TOS: 0x28}},
			false, 2, "on arrival at hop 3 (10.0.1.2), after hop 1 (10.0.1.2)"},
		{"dropped after hop 1", []Hop{{N: 1, Addr: a("10.0.0.1"), TOS: e1}, {N: 2, Silent: true}}, false, -1, "no probe got past hop 1 (10.0.0.1)"},
	} {
		tr := &Trace{Sent: aqm.ECT1, Hops: c.hops, Reached: c.reached}
		tr.find()
		if tr.Changed != c.changed || !strings.Contains(tr.Where(), c.where) {
			t.Errorf("%s: changed %d, %q; want %d and %q", c.name, tr.Changed, tr.Where(), c.changed, c.where)
		}
	}
}

// The trace sends the codepoint whose forward train showed the fault.
func TestTraceCodepoint(t *testing.T) {
	for _, c := range []struct {
		fwd  Table
		want aqm.ECN
	}{
		{table(clean()...), aqm.ECT1},
		{table(append(clean(aqm.CE), arrival{aqm.CE, aqm.ECT0, 10, 0})...), aqm.CE},
		{table(append(clean(aqm.ECT0), arrival{aqm.ECT0, aqm.NotECT, 10, 0})...), aqm.ECT0},
		{table(clean(aqm.ECT0)...), aqm.ECT0},
	} {
		r := &Result{Forward: Direction{Table: c.fwd}}
		if got := TraceCodepoint(r); got != c.want {
			t.Errorf("forward %v: trace with %v, want %v", c.fwd.Arrived, got, c.want)
		}
	}
}
