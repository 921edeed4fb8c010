package check

import (
	"fmt"
	"io"
	"net/netip"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/figure"
)

// TraceOptions are the settings of a trace.
type TraceOptions struct {
	Peer    netip.AddrPort // the responder
	Sent    aqm.ECN        // the codepoint the probes carry
	MaxHops int
	Wait    time.Duration // for each hop's answer
	// Tries is how many probes a hop gets before it counts as silent.
	Tries int
}

// DefaultTraceOptions are the trace's settings but for Peer and Sent.
func DefaultTraceOptions() TraceOptions {
	return TraceOptions{MaxHops: 30, Wait: 500 * time.Millisecond, Tries: 2}
}

// maxSilent ends a trace after this many silent hops in a row: beyond,
// a firewall most likely drops the probes.
const maxSilent = 5

// Hop is what one TTL's probe showed: the router that answered (or the
// responder, at the end) and the ECN field as it arrived there.
type Hop struct {
	N         int        // the TTL, 1 for the first router
	Addr      netip.Addr // the router that answered; invalid when Silent
	Silent    bool       // no answer within the tries
	Responder bool       // the probe reached the responder: its echo reports the field
	TOS       uint8      // the TOS byte as the router quoted it (as it arrived there)
	RTT       time.Duration
}

// ECN is the ECN field the hop saw.
func (h Hop) ECN() aqm.ECN { return aqm.ECN(h.TOS & 3) }

// Trace is a trace's outcome.
type Trace struct {
	Peer    netip.AddrPort
	Sent    aqm.ECN
	Hops    []Hop
	Reached bool // a probe reached the responder
	// Changed is the index in Hops of the first hop that saw the field
	// changed other than by a valid transition; -1 when none did.
	Changed int
}

// find sets Changed.
func (t *Trace) find() {
	t.Changed = -1
	for i, h := range t.Hops {
		if !h.Silent && !valid(t.Sent, h.ECN()) {
			t.Changed = i
			return
		}
	}
}

// Where says in one line where the field changed.
func (t *Trace) Where() string {
	if t.Changed < 0 {
		if t.Reached {
			return fmt.Sprintf("%v arrived at every hop that answered as sent (or marked CE)", t.Sent)
		}
		for i := len(t.Hops) - 1; i >= 0; i-- {
			if h := t.Hops[i]; !h.Silent {
				return fmt.Sprintf("no hop saw %v changed, and no probe got past hop %d (%v): silent after it", t.Sent, h.N, h.Addr)
			}
		}
		return fmt.Sprintf("no hop answered a %v probe", t.Sent)
	}
	h := t.Hops[t.Changed]
	// A box that forwards each packet twice answers as two hops in a row
	// from one address (a pi2hop gateway: LAN to its TUN, then its other
	// TUN to WAN). The first quote shows the field as it came in, the
	// second as the box's own queue left it: the change is inside it.
	if p := t.prevAnswered(t.Changed); p >= 0 && p == t.Changed-1 && !h.Responder && t.Hops[p].Addr == h.Addr {
		return fmt.Sprintf("%v changed to %v inside %v, which answered as hop %d with the field as sent and as hop %d with it changed: it forwards each packet twice (a pi2hop gateway does) and changed it in between",
			t.Sent, h.ECN(), h.Addr, t.Hops[p].N, h.N)
	}
	s := fmt.Sprintf("%v changed to %v on arrival at hop %d (%s)", t.Sent, h.ECN(), h.N, hopName(h))
	for i := t.Changed - 1; i >= 0; i-- {
		if p := t.Hops[i]; !p.Silent {
			s += fmt.Sprintf(", after hop %d (%v), which saw it as sent", p.N, p.Addr)
			if i < t.Changed-1 {
				s += "; the hops between are silent"
			}
			break
		}
	}
	return s
}

// prevAnswered is the index of the last hop before i that answered, -1
// when none did.
func (t *Trace) prevAnswered(i int) int {
	for i--; i >= 0; i-- {
		if !t.Hops[i].Silent {
			return i
		}
	}
	return -1
}

func hopName(h Hop) string {
	if h.Responder {
		return fmt.Sprintf("the responder %v", h.Addr)
	}
	return h.Addr.String()
}

// WriteText prints the trace as a person reads it.
func (t *Trace) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "\ntrace to %v with %v probes: the field as each hop saw it\n", t.Peer, t.Sent)
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  hop\taddress\tsaw\trtt")
	for i, h := range t.Hops {
		if h.Silent {
			fmt.Fprintf(tw, "  %d\t*\t(silent)\t\n", h.N)
			continue
		}
		mark := ""
		if i == t.Changed {
			mark = "  <- changed"
		}
		name := h.Addr.String()
		if h.Responder {
			name += " (responder)"
		}
		fmt.Fprintf(tw, "  %d\t%s\t%v\t%.2f ms%s\n", h.N, name, h.ECN(), figure.Ms(h.RTT), mark)
	}
	tw.Flush()
	fmt.Fprintf(&b, "  %s\n", t.Where())
	_, err := io.WriteString(w, b.String())
	return err
}

// TraceJSON is a trace in JSON.
type TraceJSON struct {
	Sent    string    `json:"sent"`
	Reached bool      `json:"reached"`
	Changed *HopJSON  `json:"changed,omitempty"` // the first hop that saw the field changed; left out when none did
	Where   string    `json:"where"`
	Hops    []HopJSON `json:"hops"`
}

// HopJSON is one hop in JSON.
type HopJSON struct {
	Hop       int     `json:"hop"`
	Address   string  `json:"address,omitempty"`
	Silent    bool    `json:"silent"`
	Responder bool    `json:"responder"`
	Saw       string  `json:"saw,omitempty"`
	RTTMs     float64 `json:"rtt_ms,omitempty"`
}

// JSON returns the trace's JSON form.
func (t *Trace) JSON() TraceJSON {
	j := TraceJSON{Sent: t.Sent.String(), Reached: t.Reached, Where: t.Where(), Hops: []HopJSON{}}
	for i, h := range t.Hops {
		hj := HopJSON{Hop: h.N, Silent: h.Silent, Responder: h.Responder}
		if !h.Silent {
			hj.Address, hj.Saw, hj.RTTMs = h.Addr.String(), h.ECN().String(), figure.Ms(h.RTT)
		}
		j.Hops = append(j.Hops, hj)
		if i == t.Changed {
			c := hj
			j.Changed = &c
		}
	}
	return j
}

// TraceCodepoint is the codepoint a trace after r should send: the one
// whose train showed the forward direction's first fault, ECT(1) when
// the forward direction passed.
func TraceCodepoint(r *Result) aqm.ECN {
	t := r.Forward.Table
	for _, s := range []aqm.ECN{aqm.ECT1, aqm.ECT0, aqm.CE, aqm.NotECT} {
		for _, a := range order {
			if t.Arrived[s][a] > 0 && !valid(s, a) {
				return s
			}
		}
		if t.Sent[s] > 0 && t.Lost(s) == t.Sent[s] {
			return s
		}
	}
	return aqm.ECT1
}

// TraceNote is what to say beside a trace after r that cannot show r's
// fault: a trace follows the forward path only.
func TraceNote(r *Result) string {
	if r.Forward.Verdict.Kind == Passes && r.Reverse.Verdict.Kind != Passes {
		return "the fault is on the way back, which a trace from here does not follow: run check --trace from the responder's side"
	}
	return ""
}
