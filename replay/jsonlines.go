package replay

import (
	"fmt"
	"io"

	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/internal/jsonline"
	"github.com/pi2hop/pi2hop/shaper"
)

// JSONWriter is a Handler that writes each replay event as a JSON line
// (docs/json.md): "pkt" when a packet's fate is known, "pi" at each
// queue update.
type JSONWriter struct {
	w io.Writer
	j jsonline.Line
}

// NewJSONWriter returns a JSONWriter writing to w (buffer it: a line is
// one Write).
func NewJSONWriter(w io.Writer) *JSONWriter { return &JSONWriter{w: w} }

// Arrival prints nothing: a packet's line waits for its fate.
func (jw *JSONWriter) Arrival(*Packet) error { return nil }

func (jw *JSONWriter) Depart(p *Packet, ev *shaper.Event) error {
	return jw.packet(p, ev, ev.Deq, ev.Dep)
}

func (jw *JSONWriter) Drop(p *Packet, ev *shaper.Event, where DropPoint) error {
	switch where {
	case AtEnqueue:
		return jw.packet(p, ev, -1, -1)
	case OnLink:
		return jw.packet(p, ev, ev.Deq, ev.Dep)
	}
	return jw.packet(p, ev, ev.Deq, -1)
}

// packet prints a "pkt" line; deq and dep < 0 print as null.
func (jw *JSONWriter) packet(p *Packet, ev *shaper.Event, deq, dep int64) error {
	m, v := &ev.Meta, ev.Verdict
	j := &jw.j
	j.Begin("pkt")
	j.Int("i", int64(p.Index))
	j.Int("t", m.Arrival)
	j.Uint("flow", uint64(p.Flow)) // the trace's id; Meta.Flow is its hash
	j.Str("queue", m.Class.String())
	j.Uint("ecn_in", uint64(ev.ECNIn()))
	j.Uint("ecn_out", uint64(ev.ECNOut()))
	j.Str("fault", ev.Fault.String())
	j.Str("verdict", v.Action.String())
	j.Str("reason", v.Reason.String())
	if v.Sub != 0 {
		// fq_codel's flow number, codel's drop state (count).
		j.Uint("sub", uint64(v.Sub))
	}
	if deq >= 0 {
		j.Int("deq", deq)
		j.Int("sojourn", deq-m.Arrival)
	} else {
		j.Null("deq")
		j.Null("sojourn")
	}
	if dep >= 0 {
		j.Int("dep", dep)
	} else {
		j.Null("dep")
	}
	return jw.write(j.End())
}

// Update prints a "pi" line.
func (jw *JSONWriter) Update(at int64, st *aqm.Stats) error {
	j := &jw.j
	j.Begin("pi")
	j.Int("t", at)
	j.Uint("prob_raw", uint64(st.Prob))
	j.Float("prob", aqm.ProbFloat(st.Prob), 9)
	j.Int("delay_c", st.DelayC)
	j.Int("delay_l", st.DelayL)
	return jw.write(j.End())
}

func (jw *JSONWriter) write(b []byte) error {
	if _, err := jw.w.Write(b); err != nil {
		return fmt.Errorf("writing output: %w", err)
	}
	return nil
}
