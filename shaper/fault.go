package shaper

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/pi2hop/pi2hop/aqm"
)

// FaultKind is what an ECN path fault does to the ECN field: the
// middlebox behaviours an ECN validation (RFC 9000 §13.4.2, Apple's valid
// transitions) must catch, which a bottleneck that works never shows.
type FaultKind uint8

const (
	FaultNone       FaultKind = iota
	FaultBleach               // ECT(0), ECT(1), CE -> Not-ECT
	FaultTOSZero              // the whole ToS / Traffic Class byte zeroed: DSCP and ECN
	FaultECT1ToECT0           // ECT(1) -> ECT(0): L4S re-marked as classic ECN
	FaultECT0ToECT1           // ECT(0) -> ECT(1)
	FaultCEBleach             // CE -> the ECT codepoint the packet entered the link with (ECT(1) if it came as CE)
	FaultMangle               // ECT(0), ECT(1) -> CE
	FaultDropECT              // ECT(0), ECT(1), CE dropped
	NumFaultKinds   = int(FaultDropECT) + 1
)

var faultNames = [NumFaultKinds]string{"none", "bleach", "tos-zero", "ect1-to-ect0", "ect0-to-ect1", "ce-bleach", "mangle", "drop-ect"}

// FaultKinds are the kinds' names, as a spec spells them, in kind order.
func FaultKinds() []string { return faultNames[:] }

// String returns the kind's name in specs, stats and captures.
func (k FaultKind) String() string {
	if int(k) < NumFaultKinds {
		return faultNames[k]
	}
	return "unknown"
}

// ParseFaultKind reads a kind's name.
func ParseFaultKind(s string) (FaultKind, bool) {
	for k, n := range faultNames {
		if n == s {
			return FaultKind(k), true
		}
	}
	return FaultNone, false
}

// Apply returns the codepoint the kind gives a packet that reaches the
// fault with e, having entered the link with entry, or drop. A packet
// the kind leaves alone comes out as it went in. entry matters only to
// ce-bleach: CE goes back to the ECT codepoint the packet was sent with
// (a mark the bottleneck made, lost downstream); a packet that was
// already CE when it entered (or CE from a fault before the queue) has no
// such codepoint here and becomes ECT(1), the L4S one.
func (k FaultKind) Apply(e, entry aqm.ECN) (out aqm.ECN, drop bool) {
	switch k {
	case FaultBleach, FaultTOSZero:
		return aqm.NotECT, false
	case FaultECT1ToECT0:
		if e == aqm.ECT1 {
			return aqm.ECT0, false
		}
	case FaultECT0ToECT1:
		if e == aqm.ECT0 {
			return aqm.ECT1, false
		}
	case FaultCEBleach:
		if e == aqm.CE {
			if entry == aqm.ECT0 || entry == aqm.ECT1 {
				return entry, false
			}
			return aqm.ECT1, false
		}
	case FaultMangle:
		if e != aqm.NotECT {
			return aqm.CE, false
		}
	case FaultDropECT:
		return e, e != aqm.NotECT
	}
	return e, false
}

// Fault is one direction's ECN path fault: a middlebox on the path, not
// the bottleneck. The zero Fault is none.
//
// Before (the default) it rewrites packets as they reach the link, so the
// queue classifies the faulted codepoint (an upstream middlebox); After it
// rewrites them as they leave the link, before the delay line, so marks the
// AQM made can be lost (a downstream one). Which packets it takes is
// decided as each packet reaches the link, whatever Where: those matching
// the selectors (Proto, Sport, Dport), from StartAfter or the
// StartPackets-th matching packet on, and of those a Share drawn from the
// link's seeded random source. The clock and the packet count start when
// the fault takes effect: the link's first packet for a fault it was built
// with, the change for one set while it runs.
type Fault struct {
	Kind         FaultKind
	After        bool    // rewrite after dequeue, before the delay line; false: before classification
	StartAfter   int64   // ns after the fault takes effect; 0 = at once
	StartPackets uint64  // matching packets that pass untouched first
	Share        float64 // fraction of the taken packets, 0 < Share < 1; 0 = all
	Proto        uint8   // IP protocol (with MatchProto)
	Sport, Dport uint16  // transport ports (with MatchSport, MatchDport)
	Match        uint8   // which selectors apply: MatchProto | MatchSport | MatchDport
}

// Selector bits of Fault.Match.
const (
	MatchProto uint8 = 1 << iota
	MatchSport
	MatchDport
)

// On reports whether the fault does anything.
func (f Fault) On() bool { return f.Kind != FaultNone }

// FaultSyntax is the accepted form of a fault spec, for errors and help.
const FaultSyntax = "KIND[,before|after][,after=DURATION|after=Np][,share=P%][,proto=udp|tcp|NUM][,sport=PORT][,dport=PORT]"

// ParseFault reads a fault spec: a kind (none, bleach, tos-zero,
// ect1-to-ect0, ect0-to-ect1, ce-bleach, mangle, drop-ect), then options
// in any order: before or after (where), after=DURATION or after=Np
// (when: a Go duration from the fault's start, or N packets), share=P%
// (0 < P <= 100), proto=udp|tcp|NUM, sport=PORT, dport=PORT. Examples:
// "bleach", "ce-bleach,after", "bleach,before,after=2s,share=30%",
// "ect1-to-ect0,after=100p,proto=udp,dport=5000".
func ParseFault(s string) (Fault, error) {
	var f Fault
	parts := strings.Split(strings.TrimSpace(s), ",")
	k, ok := ParseFaultKind(strings.TrimSpace(parts[0]))
	if !ok {
		return f, fmt.Errorf("%q: unknown fault kind %q (want one of %s)", s, parts[0], strings.Join(faultNames[:], ", "))
	}
	f.Kind = k
	var where, when, share bool
	for _, p := range parts[1:] {
		p = strings.TrimSpace(p)
		key, val, hasVal := strings.Cut(p, "=")
		var err error
		switch {
		case !hasVal && (key == "before" || key == "after"):
			if where {
				err = errors.New("before/after given twice")
			}
			where, f.After = true, key == "after"
		case key == "after" && hasVal:
			if when {
				err = errors.New("after= given twice")
			}
			when = true
			err = errors.Join(err, f.parseStart(val))
		case key == "share" && hasVal:
			if share {
				err = errors.New("share= given twice")
			}
			share = true
			err = errors.Join(err, f.parseShare(val))
		case key == "proto" && hasVal:
			err = f.parseProto(val)
		case (key == "sport" || key == "dport") && hasVal:
			bit, port := MatchSport, &f.Sport
			if key == "dport" {
				bit, port = MatchDport, &f.Dport
			}
			if f.Match&bit != 0 {
				err = fmt.Errorf("%s= given twice", key)
				break
			}
			n, perr := strconv.ParseUint(val, 10, 16)
			if perr != nil {
				err = fmt.Errorf("%s=%q: want a port 0..65535", key, val)
				break
			}
			*port, f.Match = uint16(n), f.Match|bit
		default:
			err = fmt.Errorf("unknown option %q", p)
		}
		if err != nil {
			return Fault{}, fmt.Errorf("%q: %w (want %s)", s, err, FaultSyntax)
		}
	}
	return f, nil
}

func (f *Fault) parseStart(val string) error {
	if n, ok := strings.CutSuffix(val, "p"); ok {
		c, err := strconv.ParseUint(n, 10, 64)
		if err != nil {
			return fmt.Errorf("after=%q: want N packets as Np (100p)", val)
		}
		f.StartPackets = c
		return nil
	}
	d, err := time.ParseDuration(val)
	if err != nil || d < 0 {
		return fmt.Errorf("after=%q: want a duration (2s, 500ms) or N packets (100p)", val)
	}
	f.StartAfter = int64(d)
	return nil
}

func (f *Fault) parseShare(val string) error {
	n, ok := strings.CutSuffix(val, "%")
	p, err := strconv.ParseFloat(n, 64)
	if !ok || err != nil || !(p > 0 && p <= 100) {
		return fmt.Errorf("share=%q: want a percentage above 0 and at most 100 (30%%)", val)
	}
	f.Share = p / 100
	if f.Share >= 1 {
		f.Share = 0 // all
	}
	return nil
}

func (f *Fault) parseProto(val string) error {
	if f.Match&MatchProto != 0 {
		return errors.New("proto= given twice")
	}
	switch val {
	case "udp":
		f.Proto = 17
	case "tcp":
		f.Proto = 6
	default:
		n, err := strconv.ParseUint(val, 10, 8)
		if err != nil {
			return fmt.Errorf("proto=%q: want udp, tcp or a protocol number 0..255", val)
		}
		f.Proto = uint8(n)
	}
	f.Match |= MatchProto
	return nil
}

// String returns the spec in the form ParseFault reads, with before
// left out (the default).
func (f Fault) String() string {
	b := []byte(f.Kind.String())
	if f.After {
		b = append(b, ",after"...)
	}
	switch {
	case f.StartPackets > 0:
		b = fmt.Appendf(b, ",after=%dp", f.StartPackets)
	case f.StartAfter > 0:
		b = fmt.Appendf(b, ",after=%v", time.Duration(f.StartAfter))
	}
	if f.Share > 0 {
		b = append(b, ",share="...)
		b = strconv.AppendFloat(b, f.Share*100, 'g', -1, 64)
		b = append(b, '%')
	}
	if f.Match&MatchProto != 0 {
		switch f.Proto {
		case 17:
			b = append(b, ",proto=udp"...)
		case 6:
			b = append(b, ",proto=tcp"...)
		default:
			b = fmt.Appendf(b, ",proto=%d", f.Proto)
		}
	}
	if f.Match&MatchSport != 0 {
		b = fmt.Appendf(b, ",sport=%d", f.Sport)
	}
	if f.Match&MatchDport != 0 {
		b = fmt.Appendf(b, ",dport=%d", f.Dport)
	}
	return string(b)
}

// matches reports whether pkt passes the selectors. The transport header
// is read only when a port selector asks for it; a packet whose protocol
// or ports cannot be read (no bytes, not IP, a later fragment) does not
// match a selector that needs them.
func (f *Fault) matches(pkt []byte) bool {
	if f.Match == 0 {
		return true
	}
	proto, ports, ok := transport(pkt, f.Match&(MatchSport|MatchDport) != 0)
	switch {
	case !ok:
		return false
	case f.Match&MatchProto != 0 && proto != f.Proto:
		return false
	case f.Match&MatchSport != 0 && uint16(ports>>16) != f.Sport:
		return false
	case f.Match&MatchDport != 0 && uint16(ports) != f.Dport:
		return false
	}
	return true
}

// transport reads an IP packet's protocol and, when wantPorts, the first
// four bytes of its transport header (source port, destination port).
// IPv6 extension headers are not walked, as aqm.Header.FlowHash.
func transport(pkt []byte, wantPorts bool) (proto uint8, ports uint32, ok bool) {
	h := aqm.Header(pkt)
	var off int
	switch h.Version() {
	case 4:
		proto, off = pkt[9], int(pkt[0]&0x0f)*4
		if wantPorts && binary.BigEndian.Uint16(pkt[6:8])&0x1fff != 0 {
			return proto, 0, false // a later fragment has no ports
		}
	case 6:
		proto, off = pkt[6], 40
	default:
		return 0, 0, false
	}
	if !wantPorts {
		return proto, 0, true
	}
	if off+4 > h.Len() {
		return proto, 0, false
	}
	return proto, binary.BigEndian.Uint32(pkt[off : off+4]), true
}

// Meta.Tag as the link uses it: a packet taken by an After fault, or
// rewritten by a Before one, with the fault's kind and the codepoint the
// packet entered the link with, so the decision travels with the packet
// through the queue however the kind changes meanwhile.
const (
	tagBefore = 0x80 // rewritten as it entered: Meta.ECN/DSCP are the faulted ones
	tagAfter  = 0x40 // to be rewritten as it leaves the link
	tagKind   = 0x1c // kind << 2
	tagECN    = 0x03 // the codepoint it entered the link with
)

func faultTag(where uint8, k FaultKind, entry aqm.ECN) uint8 {
	return where | uint8(k)<<2&tagKind | uint8(entry)&tagECN
}

func tagFault(tag uint8) (FaultKind, aqm.ECN) {
	return FaultKind(tag & tagKind >> 2), aqm.ECN(tag & tagECN)
}
