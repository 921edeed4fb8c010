package pcap

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/shaper"
)

// Annotation is the AQM's decision on one packet, written as a packet
// comment at the -out and -drop taps.
type Annotation struct {
	Class   aqm.Class   // the queue the packet was sorted into
	Sojourn int64       // dequeue time - arrival time, ns (0 for drops at enqueue)
	Prob    uint32      // the queue's p' at the decision, raw (aqm.MaxProb = 1.0)
	Verdict aqm.Verdict // what was done and by which rule
	ECNIn   aqm.ECN     // the codepoint as the packet arrived at the hop
	// HasDecision is false for a packet that has only been classified
	// (an -in tap): then only the queue and the arriving codepoint are
	// written.
	HasDecision bool
	// Fault is the ECN path fault that rewrote or dropped the packet
	// (shaper.FaultNone: none); FaultFrom and FaultTo the codepoint before
	// and after it.
	Fault              shaper.FaultKind
	FaultFrom, FaultTo aqm.ECN
}

// The comment format, one line of space-separated key=value fields after a
// fixed prefix. Unknown keys are ignored by ParseComment so fields can be
// added later. With a decision:
//
//	pi2hop: queue=L ecn-in=ECT(1) sojourn=1.234567ms prob=0.051300 verdict=marked reason=step
//
// without one (HasDecision false):
//
//	pi2hop: queue=C ecn-in=Not-ECT
//
// queue is C or L (aqm.Class.String; the LLLL class is written as L).
// ecn-in is aqm.ECN.String: Not-ECT, ECT(1), ECT(0) or CE.
// sojourn is in milliseconds with six decimals, so it is exact to the ns.
// prob is p' as a fraction of 1 with six decimals.
// verdict is aqm.Action.String: sent, marked or dropped.
// reason is aqm.Reason.String, or "none" when the verdict has no reason.
// sub, only when not 0, is aqm.Verdict.Sub: fq_codel's flow number, or
// codel's drop state (the control law's count), as in
//
//	pi2hop: queue=C ecn-in=ECT(0) sojourn=20.000000ms prob=0.000000 verdict=marked reason=codel sub=3
//
// fault and ecn, only when an ECN path fault rewrote or dropped the
// packet (shaper.FaultKind.String, and the codepoint before and after it):
//
//	pi2hop: queue=L ecn-in=ECT(1) sojourn=0.120000ms prob=0.000000 verdict=marked reason=step fault=ce-bleach ecn=CE->ECT(1)
const commentPrefix = "pi2hop:"

// AppendComment appends a's comment text to b and returns the result.
func AppendComment(b []byte, a *Annotation) []byte {
	b = append(b, commentPrefix...)
	b = append(b, " queue="...)
	b = append(b, a.Class.String()...)
	b = append(b, " ecn-in="...)
	b = append(b, a.ECNIn.String()...)
	if !a.HasDecision {
		return b
	}
	b = append(b, " sojourn="...)
	b = appendMillis(b, a.Sojourn)
	b = append(b, " prob="...)
	b = strconv.AppendFloat(b, aqm.ProbFloat(a.Prob), 'f', 6, 64)
	b = append(b, " verdict="...)
	b = append(b, a.Verdict.Action.String()...)
	b = append(b, " reason="...)
	if a.Verdict.Reason == aqm.ReasonNone {
		b = append(b, "none"...)
	} else {
		b = append(b, a.Verdict.Reason.String()...)
	}
	if a.Verdict.Sub != 0 {
		b = append(b, " sub="...)
		b = strconv.AppendUint(b, uint64(a.Verdict.Sub), 10)
	}
	if a.Fault != shaper.FaultNone {
		b = append(b, " fault="...)
		b = append(b, a.Fault.String()...)
		b = append(b, " ecn="...)
		b = append(b, a.FaultFrom.String()...)
		b = append(b, "->"...)
		b = append(b, a.FaultTo.String()...)
	}
	return b
}

// appendMillis writes ns as milliseconds with exactly six decimals, using
// integer arithmetic so the round trip is exact.
func appendMillis(b []byte, ns int64) []byte {
	u := uint64(ns) // the magnitude in uint64, so that MinInt64 has one
	if ns < 0 {
		b = append(b, '-')
		u = -u
	}
	b = strconv.AppendUint(b, u/1e6, 10)
	b = append(b, '.')
	frac := u % 1e6
	for d := uint64(1e5); d > 0; d /= 10 {
		b = append(b, byte('0'+frac/d%10))
	}
	return append(b, "ms"...)
}

// errNotOurs says a comment is not a pi2hop annotation (someone else's).
var errNotOurs = errors.New("not a pi2hop annotation")

// ParseComment reads a comment written by AppendComment. It returns
// errNotOurs (wrapped) for comments without the pi2hop prefix, and an error
// naming the field for malformed ones.
func ParseComment(s string) (Annotation, error) {
	var a Annotation
	rest, ok := strings.CutPrefix(s, commentPrefix)
	if !ok {
		return a, fmt.Errorf("comment %q: %w", s, errNotOurs)
	}
	var haveQueue, haveVerdict bool
	// A plain loop rather than strings.Fields: analysis parses one
	// comment per packet, millions per run.
	for rest != "" {
		var field string
		if i := strings.IndexByte(rest, ' '); i >= 0 {
			field, rest = rest[:i], rest[i+1:]
		} else {
			field, rest = rest, ""
		}
		if field == "" {
			continue
		}
		key, val, ok := strings.Cut(field, "=")
		if !ok {
			return a, fmt.Errorf("comment %q: field %q is not key=value", s, field)
		}
		var err error
		switch key {
		case "queue":
			haveQueue = true
			switch val {
			case "C":
				a.Class = aqm.Classic
			case "L":
				a.Class = aqm.L4S
			default:
				err = errors.New("want C or L")
			}
		case "ecn-in":
			a.ECNIn, err = parseECN(val)
		case "sojourn":
			a.Sojourn, err = parseMillis(val)
			a.HasDecision = true
		case "prob":
			var f float64
			f, err = strconv.ParseFloat(val, 64)
			if err == nil && (f < 0 || f > 1) {
				err = errors.New("want 0..1")
			}
			a.Prob = uint32(math.Round(f * aqm.MaxProb)) // the inverse of aqm.ProbFloat
			a.HasDecision = true
		case "verdict":
			haveVerdict = true
			a.HasDecision = true
			switch val {
			case aqm.Pass.String():
				a.Verdict.Action = aqm.Pass
			case aqm.Mark.String():
				a.Verdict.Action = aqm.Mark
			case aqm.Drop.String():
				a.Verdict.Action = aqm.Drop
			default:
				err = errors.New("want sent, marked or dropped")
			}
		case "reason":
			a.Verdict.Reason, err = parseReason(val)
			a.HasDecision = true
		case "fault":
			var ok bool
			if a.Fault, ok = shaper.ParseFaultKind(val); !ok || a.Fault == shaper.FaultNone {
				err = errors.New("want a fault kind: " + strings.Join(shaper.FaultKinds()[1:], ", "))
			}
			a.HasDecision = true
		case "ecn":
			from, to, ok := strings.Cut(val, "->")
			if !ok {
				err = errors.New("want FROM->TO, as ECT(1)->Not-ECT")
				break
			}
			if a.FaultFrom, err = parseECN(from); err == nil {
				a.FaultTo, err = parseECN(to)
			}
			a.HasDecision = true
		case "sub":
			var n uint64
			n, err = strconv.ParseUint(val, 10, 32)
			a.Verdict.Sub = uint32(n)
			a.HasDecision = true
		}
		if err != nil {
			return a, fmt.Errorf("comment %q: %s=%q: %v", s, key, val, err)
		}
	}
	if !haveQueue {
		return a, fmt.Errorf("comment %q: no queue= field", s)
	}
	if a.HasDecision && !haveVerdict {
		// sojourn, prob, reason and sub are written with a decision only:
		// one alone would be lost when the annotation is written again.
		return a, fmt.Errorf("comment %q: sojourn, prob, reason or sub without verdict=", s)
	}
	a.Verdict.Class = a.Class
	return a, nil
}

func parseECN(s string) (aqm.ECN, error) {
	for e := aqm.NotECT; e <= aqm.CE; e++ {
		if e.String() == s {
			return e, nil
		}
	}
	return 0, errors.New("want Not-ECT, ECT(1), ECT(0) or CE")
}

func parseReason(s string) (aqm.Reason, error) {
	if s == "none" {
		return aqm.ReasonNone, nil
	}
	for r := aqm.ReasonNone + 1; int(r) < aqm.NumReasons; r++ {
		if r.String() == s {
			return r, nil
		}
	}
	return 0, errors.New("unknown reason")
}

// parseMillis reads "1.234567ms" back into ns without float rounding:
// digits only (no second sign), and an error, not a wrapped number, for
// what does not fit an int64 of ns.
func parseMillis(s string) (int64, error) {
	bad := errors.New("want milliseconds like 1.234567ms")
	num, ok := strings.CutSuffix(s, "ms")
	if !ok {
		return 0, bad
	}
	neg := strings.HasPrefix(num, "-")
	num = strings.TrimPrefix(num, "-")
	whole, frac, _ := strings.Cut(num, ".")
	if len(frac) > 6 {
		return 0, errors.New("more than 6 decimals")
	}
	w, err := strconv.ParseUint(whole, 10, 64) // no sign accepted
	if err != nil {
		return 0, bad
	}
	var f uint64
	if frac != "" {
		if f, err = strconv.ParseUint(frac, 10, 64); err != nil {
			return 0, bad
		}
		for range 6 - len(frac) {
			f *= 10
		}
	}
	limit := uint64(math.MaxInt64)
	if neg {
		limit++ // -2^63 ns
	}
	if w > limit/1e6 || w*1e6 > limit-f {
		return 0, errors.New("out of range")
	}
	ns := int64(w*1e6 + f) // -2^63 wraps to itself below
	if neg {
		ns = -ns
	}
	return ns, nil
}
