package replay

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/internal/jsonline"
	"github.com/pi2hop/pi2hop/internal/sketch"
	"github.com/pi2hop/pi2hop/shaper"
)

// SojournAccuracy is the relative accuracy of the table's sojourn
// percentiles (package sketch), as analyze's.
const SojournAccuracy = 0.01

// Table is a Handler that keeps what the summary a person reads needs
// beyond Result: each queue's sojourns (dequeue − arrival of every packet
// that left it, as QueueCounts.Dequeued counts them), in a sketch whose
// memory does not grow with the trace.
type Table struct {
	sojourn [2]*sketch.Sketch // by QueueIndex
}

// NewTable returns an empty Table.
func NewTable() *Table {
	return &Table{sojourn: [2]*sketch.Sketch{sketch.New(SojournAccuracy), sketch.New(SojournAccuracy)}}
}

func (t *Table) Arrival(*Packet) error { return nil }

func (t *Table) Depart(p *Packet, ev *shaper.Event) error {
	t.sojourn[QueueIndex(ev.Meta.Class)].Add(ev.Deq - ev.Meta.Arrival)
	return nil
}

func (t *Table) Drop(p *Packet, ev *shaper.Event, where DropPoint) error {
	if where != AtEnqueue { // dequeued, then dropped or lost
		t.sojourn[QueueIndex(ev.Meta.Class)].Add(ev.Deq - ev.Meta.Arrival)
	}
	return nil
}

func (t *Table) Update(int64, *aqm.Stats) error { return nil }

// Write prints the summary a person reads: per queue the arrivals, sent,
// marks and drops by reason and sojourn p50/p99, the link's use, the ECN
// faults, and the configuration in force, read from summary (the JSON
// line WriteSummary made of the same run: one list of config keys), its
// queue knobs in their flags' words.
func (t *Table) Write(w io.Writer, res *Result, summary []byte, kind string, queue []jsonline.Field) error {
	var b bytes.Buffer
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "queue\tarrivals\tsent\tmarked\tdropped\tsojourn p50\tp99\tmax\t")
	markReasons, _ := Reasons(kind)
	dropReasons := DropReasons(kind)
	var why []string
	for k, name := range [2]string{"C", "L"} {
		q, s := &res.Queues[k], t.sojourn[k]
		p50, p99, max := "-", "-", "-"
		if s.Count() > 0 {
			p50, p99, max = msWords(s.Quantile(0.50)), msWords(s.Quantile(0.99)), msWords(s.Max())
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%s\t%s\t%s\t\n", name, q.Arrivals, q.Sent, q.Marked(), q.Dropped(), p50, p99, max)
		r := append(byReason("marks", &q.Marks, markReasons), byReason("drops", &q.Drops, dropReasons)...)
		if r != nil {
			why = append(why, name+": "+strings.Join(r, "; "))
		}
	}
	tw.Flush()
	for _, l := range why {
		fmt.Fprintln(&b, l)
	}
	fmt.Fprintf(&b, "%d packets, link busy %.1f %% of %v (virtual time)\n", res.Packets, 100*res.Utilisation(),
		time.Duration(res.LastDeparture-res.FirstArrival).Round(time.Microsecond))
	var faults []string
	for k := shaper.FaultNone + 1; int(k) < shaper.NumFaultKinds; k++ {
		if n := res.Faults[k]; n > 0 {
			faults = append(faults, fmt.Sprintf("%s %d", k, n))
		}
	}
	if faults != nil {
		fmt.Fprintf(&b, "ECN path fault, packets rewritten or dropped: %s\n", strings.Join(faults, ", "))
	}
	cfg, err := configWords(summary, queue)
	if err != nil {
		return err
	}
	b.WriteString(wrap("config: ", cfg, 100))
	_, err = w.Write(b.Bytes())
	return err
}

// byReason is "what reason n, ..." for the reasons with a count, or nil.
func byReason(what string, counts *[aqm.NumReasons]uint64, reasons []aqm.Reason) []string {
	var parts []string
	for _, r := range reasons {
		if n := counts[r]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", r, n))
		}
	}
	if parts == nil {
		return nil
	}
	return []string{what + " " + strings.Join(parts, ", ")}
}

func msWords(ns int64) string { return fmt.Sprintf("%.2f ms", float64(ns)/1e6) }

// wrap breaks words (", "-separated) into lines of at most width
// characters, the first after head, the others indented.
func wrap(head, words string, width int) string {
	var b strings.Builder
	line := head
	for i, w := range strings.Split(words, ", ") {
		if i > 0 && len(line)+len(w)+2 > width {
			b.WriteString(line + ",\n")
			line = "  " + w
			continue
		}
		if i > 0 {
			line += ", "
		}
		line += w
	}
	b.WriteString(line + "\n")
	return b.String()
}

// configWords is the summary line's "config" object as key value pairs
// in its order: the link's delay as a duration, a queue knob in its
// flag's words.
func configWords(summary []byte, queue []jsonline.Field) (string, error) {
	words := map[string]string{}
	for _, k := range queue {
		words[k.Key] = k.Words
	}
	var line struct {
		Config json.RawMessage `json:"config"`
	}
	if err := json.Unmarshal(summary, &line); err != nil {
		return "", fmt.Errorf("replay summary: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(line.Config))
	dec.UseNumber()
	if _, err := dec.Token(); err != nil { // {
		return "", fmt.Errorf("replay summary config: %w", err)
	}
	var parts []string
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return "", err
		}
		v, err := dec.Token()
		if err != nil {
			return "", err
		}
		key, _ := k.(string)
		val, ok := words[key]
		if !ok {
			val = fmt.Sprint(v)
		}
		if n, isNum := v.(json.Number); isNum && key == "delay" {
			if i, err := n.Int64(); err == nil {
				val = time.Duration(i).String()
			}
		}
		parts = append(parts, key+" "+val)
	}
	return strings.Join(parts, ", "), nil
}
