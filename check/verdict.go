package check

import (
	"fmt"

	"github.com/pi2hop/pi2hop/aqm"
)

// The verdicts of one direction. Passes is the only one that lets L4S
// traffic through as sent.
const (
	Passes     = "ECN passes"
	ToSZeroed  = "ToS zeroed"                 // the whole TOS / traffic class byte zeroed: DSCP and ECN
	Bleached   = "bleached"                   // an ECN-capable codepoint arrived Not-ECT
	CEBleached = "CE bleached"                // CE arrived as something else: congestion hidden
	ECT1ToECT0 = "ECT(1) re-marked to ECT(0)" // the L4S identifier lost: Classic treatment after
	ECTDropped = "ECT dropped"                // ECN-capable probes lost where Not-ECT ones arrive
	Mangled    = "mangled"                    // any other transition, or every ECT probe CE
	NoneCame   = "nothing arrived"            // every probe of the direction lost
)

// order is the codepoints in the order tables list them.
var order = [4]aqm.ECN{aqm.NotECT, aqm.ECT0, aqm.ECT1, aqm.CE}

// ProbeDSCP is the DSCP every probe carries (AF11), so that a middlebox
// zeroing the whole TOS byte is told from one bleaching only the ECN
// field.
const ProbeDSCP = 10

// Table is what arrived of the probes sent one way, indexed by the
// codepoint sent and then the codepoint received (aqm.ECN values).
type Table struct {
	Sent    [4]int
	Arrived [4][4]int
	// TOSZero counts, of Arrived, the probes whose whole TOS byte
	// arrived zero (the probes carry ProbeDSCP).
	TOSZero [4][4]int
	// TTLMin and TTLMax are the lowest and highest TTL (hop limit) the
	// probes arrived with; 0 when the receiver could not read it.
	TTLMin, TTLMax int
}

// received is how many probes sent as s arrived.
func (t *Table) received(s aqm.ECN) int {
	n := 0
	for _, c := range t.Arrived[s] {
		n += c
	}
	return n
}

// Lost is how many probes sent as s did not arrive.
func (t *Table) Lost(s aqm.ECN) int { return max(t.Sent[s]-t.received(s), 0) }

// Fault is one invalid behaviour seen, with the figures that show it.
type Fault struct {
	Kind   string `json:"kind"`
	Detail string `json:"detail"`
}

// Verdict is a direction's headline and every fault behind it, most
// severe first; Kind is Passes when Faults is empty.
type Verdict struct {
	Kind   string
	Faults []Fault
}

// precedence ranks the faults: the first one found in this list is the
// headline. Losing ECT probes outright is worst (an ECN sender stalls),
// then losing the field with the DSCP, losing it alone, hiding
// congestion, losing the L4S identifier, and other transitions.
var precedence = []string{NoneCame, ECTDropped, ToSZeroed, Bleached, CEBleached, ECT1ToECT0, Mangled}

// Judge gives the verdict on one direction's table. Any invalid
// transition is a fault, however few probes showed it: a path that
// changes the field for some packets (one of several routes, a share of
// the load) changes it for some of a flow's.
func Judge(t Table) Verdict {
	var faults []Fault
	add := func(kind, format string, a ...any) {
		faults = append(faults, Fault{kind, fmt.Sprintf(format, a...)})
	}
	total, sent := 0, 0
	for _, s := range order {
		total += t.received(s)
		sent += t.Sent[s]
	}
	if total == 0 {
		if sent > 0 {
			add(NoneCame, "all %d probes lost", sent)
		}
		return verdict(faults)
	}
	lossFrac := func(s aqm.ECN) float64 {
		if t.Sent[s] == 0 {
			return 0
		}
		return float64(t.Lost(s)) / float64(t.Sent[s])
	}
	// Lost far more often than Not-ECT: a filter or a policer that drops
	// by the ECN field (at least half lost, and a quarter more than
	// Not-ECT), rather than loss that hits every codepoint alike.
	for _, s := range []aqm.ECN{aqm.ECT0, aqm.ECT1, aqm.CE} {
		if t.Sent[s] > 0 && lossFrac(s) >= 0.5 && lossFrac(s) >= lossFrac(aqm.NotECT)+0.25 {
			add(ECTDropped, "%v: %d of %d lost, Not-ECT: %d of %d", s, t.Lost(s), t.Sent[s], t.Lost(aqm.NotECT), t.Sent[aqm.NotECT])
		}
	}
	for _, s := range order {
		for _, r := range order {
			n := t.Arrived[s][r]
			if n == 0 || valid(s, r) {
				continue
			}
			of := t.received(s)
			switch {
			case r == aqm.NotECT && t.TOSZero[s][r] == n:
				add(ToSZeroed, "%v arrived as Not-ECT with DSCP 0: %d of %d", s, n, of)
			case r == aqm.NotECT && s != aqm.CE:
				add(Bleached, "%v arrived as Not-ECT: %d of %d", s, n, of)
			case s == aqm.CE && bleachesECT(t):
				add(Bleached, "CE arrived as %v: %d of %d", r, n, of)
			case s == aqm.CE:
				add(CEBleached, "CE arrived as %v: %d of %d", r, n, of)
			case s == aqm.ECT1 && r == aqm.ECT0:
				add(ECT1ToECT0, "ECT(1) arrived as ECT(0): %d of %d", n, of)
			default:
				add(Mangled, "%v arrived as %v: %d of %d", s, r, n, of)
			}
		}
	}
	// Every ECT probe arriving CE is valid packet by packet, but no AQM
	// marks every packet of a probe train: something sets CE regardless.
	ect := t.received(aqm.ECT0) + t.received(aqm.ECT1)
	if ce := t.Arrived[aqm.ECT0][aqm.CE] + t.Arrived[aqm.ECT1][aqm.CE]; ect >= 4 && ce == ect {
		add(Mangled, "every ECT probe arrived as CE: %d of %d", ce, ect)
	}
	return verdict(faults)
}

// bleachesECT reports whether the table shows ECT(0) or ECT(1) arriving
// Not-ECT: CE turned to Not-ECT is then part of bleaching the whole
// field rather than CE bleaching alone.
func bleachesECT(t Table) bool {
	return t.Arrived[aqm.ECT0][aqm.NotECT] > 0 || t.Arrived[aqm.ECT1][aqm.NotECT] > 0
}

// valid reports whether a packet sent as s may arrive as r: unchanged, or
// an ECN-capable codepoint marked CE (RFC 3168 §5, RFC 9331 §5.1).
func valid(s, r aqm.ECN) bool {
	return s == r || (r == aqm.CE && (s == aqm.ECT0 || s == aqm.ECT1))
}

// verdict orders faults by precedence and names the headline.
func verdict(faults []Fault) Verdict {
	v := Verdict{Kind: Passes}
	for _, k := range precedence {
		for _, f := range faults {
			if f.Kind == k {
				v.Faults = append(v.Faults, f)
			}
		}
	}
	if len(v.Faults) > 0 {
		v.Kind = v.Faults[0].Kind
	}
	return v
}
