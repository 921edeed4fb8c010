package analyze

import (
	"fmt"
	"time"

	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/pcap"
)

// Naming a flow's ECN path fault. A packet seen at an in and an out point
// (matched by matchKey: 5-tuple, IPv4 identification or IPv6 flow label,
// length and the first transport bytes) shows what the path did to its
// ECN field. ValidTransition holds the valid set; every other transition is named with the fault kind it matches (the kinds of
// pi2hop's own --ecn-fault). Two faults leave only valid transitions and
// are found from the flow as a whole: mangling (every ECT packet CE with
// no queue to explain it) and an ECT filter (the ECT packets missing at
// the out point while the flow's Not-ECT packets arrive).

// Thresholds of the flow-wide faults: a handful of CE marks or losses is
// what any AQM does, so these need enough packets to tell a path that
// does it to all of them (as many as a sender's ECN test sends).
const (
	faultMinPackets = 10
	// dropECTShare is the share of a flow's ECT packets that must be
	// missing at the out point to call it an ECT filter.
	dropECTShare = 0.9
	// noQueueSpread: a flow whose transit varies by less than the L4S
	// step threshold met no queue that would mark it (RFC 9332 §4.2.1).
	noQueueSpread = int64(time.Millisecond)
)

// faultAcc gathers one flow's evidence of an ECN path fault.
type faultAcc struct {
	// trans counts matched packets by codepoint at the in point (CE when
	// the hop's annotation says its AQM marked the packet) and at out.
	trans [4][4]uint64
	// tosZeroed counts matched ECN-capable packets whose DSCP was
	// non-zero at in and whose whole ToS byte was zero at out.
	tosZeroed uint64
	in        [4]uint64 // packets at the in point by codepoint
	missing   [4]uint64 // of those, never seen at out (dropped or unseen)
	// ceByPath counts ECT packets that left CE although the hop's
	// annotation says its AQM did not mark them; annotatedCE those
	// ECT → CE packets that carried an annotation at all.
	ceByPath, annotatedCE uint64
	// transit of matched packets, for the no-queue test without
	// annotations.
	transitMin, transitMax int64
	matched                uint64
}

func (f *faultAcc) addTransit(v int64) {
	if f.matched == 0 || v < f.transitMin {
		f.transitMin = v
	}
	if f.matched == 0 || v > f.transitMax {
		f.transitMax = v
	}
	f.matched++
}

// FlowFault is one ECN path fault seen on a flow.
type FlowFault struct {
	// Kind is the pi2hop --ecn-fault kind it matches (bleach, tos-zero,
	// ect1-to-ect0, ect0-to-ect1, ce-bleach, mangle, drop-ect), or
	// "invalid" for a transition outside the valid set that no kind makes.
	Kind string `json:"kind"`
	// From and To are the codepoints at in and out; To is "missing" for
	// packets that never arrived (drop-ect).
	From    string `json:"from"`
	To      string `json:"to"`
	Packets uint64 `json:"packets"`
	// Text says it in words, as the table prints it.
	Text string `json:"text"`
}

// faults names what f shows, in the order of the codepoints.
func (f *faultAcc) faults() []FlowFault {
	var out []FlowFault
	for in := aqm.NotECT; in <= aqm.CE; in++ {
		for to := aqm.NotECT; to <= aqm.CE; to++ {
			n := f.trans[in][to]
			if n == 0 || ValidTransition(in, to) {
				continue
			}
			kind, what := transitionFault(in, to)
			if kind == "bleach" && f.tosZeroed > 0 {
				kind, what = "tos-zero", "ToS zeroed, DSCP too"
			}
			out = append(out, FlowFault{Kind: kind, From: in.String(), To: to.String(), Packets: n,
				Text: fmt.Sprintf("%s -> %s: %s (%s)", in, to, what, kind)})
		}
	}
	if ff, ok := f.mangled(); ok {
		out = append(out, ff)
	}
	if ff, ok := f.ectDropped(); ok {
		out = append(out, ff)
	}
	return out
}

// transitionFault names an invalid transition by the kind that makes it.
func transitionFault(in, to aqm.ECN) (kind, what string) {
	switch {
	case in == aqm.NotECT:
		return "invalid", "Not-ECT made ECN-capable"
	case to == aqm.NotECT:
		return "bleach", "bleached"
	case in == aqm.CE:
		return "ce-bleach", "CE bleached"
	case in == aqm.ECT1 && to == aqm.ECT0:
		return "ect1-to-ect0", "re-marked"
	case in == aqm.ECT0 && to == aqm.ECT1:
		return "ect0-to-ect1", "re-marked"
	}
	return "invalid", "not a valid change"
}

// mangled: every matched ECT packet left CE, and no queue explains it (the
// hop's annotations say its AQM did not mark most of them; without
// annotations, the flow's transit hardly varied).
func (f *faultAcc) mangled() (FlowFault, bool) {
	var ect, ce uint64
	from := aqm.ECT1
	for _, e := range []aqm.ECN{aqm.ECT1, aqm.ECT0} {
		for to := aqm.NotECT; to <= aqm.CE; to++ {
			ect += f.trans[e][to]
		}
		ce += f.trans[e][aqm.CE]
		if f.trans[e][aqm.CE] > f.trans[from][aqm.CE] {
			from = e
		}
	}
	if ect < faultMinPackets || ce != ect {
		return FlowFault{}, false
	}
	noQueue := f.transitMax-f.transitMin < noQueueSpread
	if f.annotatedCE > 0 {
		noQueue = 2*f.ceByPath > f.annotatedCE
	}
	if !noQueue {
		return FlowFault{}, false
	}
	return FlowFault{Kind: "mangle", From: from.String(), To: aqm.CE.String(), Packets: ce,
		Text: fmt.Sprintf("%s -> CE on every packet with no queue: mangled (mangle)", from)}, true
}

// ectDropped: nearly all the flow's ECT packets are missing at the out
// point, and its Not-ECT packets (if any) mostly are not.
func (f *faultAcc) ectDropped() (FlowFault, bool) {
	ect := f.in[aqm.ECT1] + f.in[aqm.ECT0] + f.in[aqm.CE]
	lost := f.missing[aqm.ECT1] + f.missing[aqm.ECT0] + f.missing[aqm.CE]
	if ect < faultMinPackets || float64(lost) < dropECTShare*float64(ect) {
		return FlowFault{}, false
	}
	if n := f.in[aqm.NotECT]; n > 0 && 2*f.missing[aqm.NotECT] > n {
		return FlowFault{}, false // everything is lost, not just ECT
	}
	from := aqm.ECT1
	for _, e := range []aqm.ECN{aqm.ECT0, aqm.CE} {
		if f.missing[e] > f.missing[from] {
			from = e
		}
	}
	return FlowFault{Kind: "drop-ect", From: from.String(), To: "missing", Packets: lost,
		Text: fmt.Sprintf("ECT packets missing at egress (%d of %d): dropped (drop-ect)", lost, ect)}, true
}

// addOut records a matched packet m seen at the out point.
func (f *faultAcc) addOut(p *pcap.Packet, h *ipHeader, m *pending) {
	from := m.ecn
	aqmMarked := p.HasAnn && p.Ann.HasDecision && p.Ann.Verdict.Action == aqm.Mark
	if aqmMarked && h.ecn != aqm.CE {
		// The hop's AQM marked it and the field left without CE: a
		// fault after the queue took the congestion signal away.
		from = aqm.CE
	}
	f.trans[from][h.ecn]++
	if (m.ecn == aqm.ECT1 || m.ecn == aqm.ECT0) && h.ecn == aqm.CE && p.HasAnn && p.Ann.HasDecision {
		f.annotatedCE++
		if !aqmMarked {
			f.ceByPath++
		}
	}
	if m.ecn != aqm.NotECT && m.tos>>2 != 0 && h.tos == 0 {
		f.tosZeroed++
	}
	f.addTransit(p.Time - m.at)
}
