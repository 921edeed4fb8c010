package hop

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/figure"
	"github.com/pi2hop/pi2hop/internal/jsonline"
	"github.com/pi2hop/pi2hop/shaper"
)

// StatsRow is one direction's figures as `pi2hop stats` shows them: tc's
// dualpi2 statistics (same names and units: delays in µs) and the link's.
// Rates, utilisation and sojourn quantiles cover an interval (see
// DirStats.Row); the other counters are totals since the start.
type StatsRow struct {
	Dir string `json:"dir"`
	// tc -s qdisc show ... dualpi2
	Qdisc      string  `json:"qdisc"`
	SentBytes  uint64  `json:"sent_bytes"`
	SentPkts   uint64  `json:"sent_packets"`
	Dropped    uint64  `json:"dropped"`
	Overlimits uint64  `json:"overlimits"`
	BacklogB   int     `json:"backlog_bytes"`
	BacklogP   int     `json:"backlog_packets"`
	Prob       float64 `json:"prob"`
	DelayCus   int64   `json:"delay_c_us"`
	DelayLus   int64   `json:"delay_l_us"`
	PktsInC    uint64  `json:"pkts_in_c"`
	PktsInL    uint64  `json:"pkts_in_l"`
	MaxQ       uint32  `json:"maxq"`
	ECNMark    uint64  `json:"ecn_mark"`
	StepMarks  uint64  `json:"step_marks"`
	Credit     int32   `json:"credit"`
	MemUsed    uint64  `json:"memory_used"`
	MemMax     uint64  `json:"memory_max"`
	MemLimit   uint64  `json:"memory_limit"`
	// The other kinds' tc -s xstats, under their qdisc's name (nil for
	// the other kinds).
	CoDel   aqm.TCStats `json:"codel,omitempty"`
	PIE     aqm.TCStats `json:"pie,omitempty"`
	FQCodel aqm.TCStats `json:"fq_codel,omitempty"`
	QProt   aqm.TCStats `json:"queue_protection,omitempty"`
	// DOCSISClassic is the docsis kind's Classic AQM.
	DOCSISClassic aqm.TCStats `json:"docsis_classic,omitempty"`
	// queue is the queue's figures the row was made of, for QdiscLines.
	queue aqm.Stats
	// link
	Interval    float64 `json:"interval_s"`
	InPkts      uint64  `json:"in_packets"`
	InBytes     uint64  `json:"in_bytes"`
	OutPkts     uint64  `json:"out_packets"`
	OutBytes    uint64  `json:"out_bytes"`
	OutBps      float64 `json:"out_bps"`
	Utilisation float64 `json:"utilisation"`
	QueueBusy   float64 `json:"queue_busy"`
	// NotBottleneck is the warning that the hop is not the path's
	// bottleneck, when it holds (DirStats.NotBottleneck).
	NotBottleneck string            `json:"not_bottleneck,omitempty"`
	Marked        uint64            `json:"marked"`
	Malformed     uint64            `json:"malformed"`
	Drops         map[string]uint64 `json:"drops"`      // by aqm.Reason name, and nobuffer, write
	ECNFaults     map[string]uint64 `json:"ecn_faults"` // packets a path fault rewrote or dropped, by kind
	Pending       int               `json:"pending"`
	SojournC      MsQuantiles       `json:"sojourn_c"`
	SojournL      MsQuantiles       `json:"sojourn_l"`
	Lateness      UsQuantiles       `json:"lateness"` // the driver's pacing error
	RingDrops     uint64            `json:"tun_ring_drops"`
	// CPUPerPkt is the direction's owner thread's CPU time (including the
	// kernel's work inside its writes) per packet read, over the stats
	// intervals that read one; nil when none did.
	CPUPerPkt *float64 `json:"cpu_us_per_packet"`
	// Config is the configuration in force (after any live `set`).
	Config ConfigRow `json:"config"`
}

// MsQuantiles are a distribution's nearest-rank percentiles and its
// measured maximum, in ms; no percentile exceeds Max (Histogram.Quantile).
type MsQuantiles struct {
	P50 float64 `json:"p50_ms"`
	P99 float64 `json:"p99_ms"`
	Max float64 `json:"max_ms"`
}

// UsQuantiles are MsQuantiles in µs.
type UsQuantiles struct {
	P50 float64 `json:"p50_us"`
	P99 float64 `json:"p99_us"`
	Max float64 `json:"max_us"`
}

// ConfigRow is a direction's configuration in force, as tc qdisc show
// prints a dualpi2 qdisc and netem a link: the queue's parameters in tc's
// words (aqm.Spec.TCParams) and the link's. A link setting's field is
// spelled as its flag (delay, ecn-fault), as in set requests and replay's
// config object.
type ConfigRow struct {
	Qdisc string `json:"qdisc"`
	// Params are the queue's parameters: tc keyword -> value as tc
	// prints it ("15ms", "10000p"), or true for a keyword that stands
	// alone ("l4s_ect", "drop_dequeue").
	Params map[string]any `json:"params"`
	TC     string         `json:"tc"`   // "qdisc dualpi2 limit 10000p ...", in tc's order
	Link   string         `json:"link"` // "rate 10Mbit delay 10ms", in netem's words
	// RateBps is the link rate, bit/s; 0 when it is not one constant
	// rate (unlimited, a trace or a schedule: Rate says which).
	RateBps   uint64 `json:"rate_bps"`
	Rate      string `json:"rate"`  // as tc prints it ("10Mbit"), or the trace
	Delay     int64  `json:"delay"` // one-way, ns
	Jitter    string `json:"jitter,omitempty"`
	Loss      string `json:"loss,omitempty"`
	Aggregate string `json:"aggregate,omitempty"`
	ECNFault  string `json:"ecn-fault,omitempty"` // the path fault's spec, as --ecn-fault takes it
	// AlphaHz and BetaHz are the PI gains as set (dualpi2, docsis): Params'
	// alpha and beta are tc's rounded read-back of the kernel's internal
	// scaling of them (aqm.GainReadBack), a little less.
	AlphaHz float64 `json:"alpha,omitempty"`
	BetaHz  float64 `json:"beta,omitempty"`
	// Knobs are the queue's settings under their keys, as the table of
	// settings renders Spec (instance.QueueKnobs; hop spells none),
	// beside the fields above in the JSON object. With them, alpha and
	// beta are theirs: what --alpha and --beta set (under docsis, the
	// Classic AQM's gains, as in replay's config object).
	Knobs []jsonline.Field `json:"-"`
}

// MarshalJSON is the row's fields, then its Knobs; a knob whose key a
// field has already is left out.
func (c ConfigRow) MarshalJSON() ([]byte, error) {
	type fields ConfigRow // the same fields, without this method
	if len(c.Knobs) > 0 {
		c.AlphaHz, c.BetaHz = 0, 0 // the knobs', if the kind has them
	}
	b, err := json.Marshal(fields(c))
	if err != nil || len(c.Knobs) == 0 {
		return b, err
	}
	var have map[string]json.RawMessage
	if err := json.Unmarshal(b, &have); err != nil {
		return nil, err
	}
	b = b[:len(b)-1] // the closing brace
	for _, k := range c.Knobs {
		if _, dup := have[k.Key]; !dup {
			b = fmt.Appendf(b, ",%q:%s", k.Key, k.JSON)
		}
	}
	return append(b, '}'), nil
}

// Row returns s's figures with rates, utilisation and quantiles over the
// interval since prev, an earlier snapshot of the same direction, or since
// the start when prev is nil.
func (s *DirStats) Row(prev *DirStats) StatsRow {
	q := s.Queue
	v := StatsRow{
		Dir: s.Dir.String(), Qdisc: s.Kind,
		SentBytes: q.SentBytes, SentPkts: q.SentPackets, Dropped: q.Dropped, Overlimits: q.Overlimits,
		BacklogB: q.BacklogBytes, BacklogP: q.BacklogPkts,
		Prob: aqm.ProbFloat(q.Prob), DelayCus: q.DelayC / 1000, DelayLus: q.DelayL / 1000,
		PktsInC: q.PktsInC, PktsInL: q.PktsInL, MaxQ: q.MaxQ, ECNMark: q.ECNMark, StepMarks: q.StepMarks,
		Credit: q.Credit, MemUsed: q.MemoryUsed, MemMax: q.MaxMemoryUsed, MemLimit: q.MemoryLimit,
		InPkts: s.In, InBytes: s.InBytes, OutPkts: s.Out, OutBytes: s.OutBytes,
		Marked: s.Marked, Malformed: s.Malformed, Pending: s.Pending, RingDrops: s.RingDrops,
		Drops: map[string]uint64{"nobuffer": s.NoBuffer, "write": s.WriteErrors},
	}
	for r, n := range s.QueueDrops {
		if name := aqm.Reason(r).String(); name != "" {
			v.Drops[name] = n
		}
	}
	v.ECNFaults = make(map[string]uint64, shaper.NumFaultKinds-1)
	for k := shaper.FaultNone + 1; int(k) < shaper.NumFaultKinds; k++ {
		v.ECNFaults[k.String()] = s.Link.Faults[k]
	}
	v.addXStats(&q)
	iv := s.since(prev)
	if iv.Elapsed > 0 {
		v.Interval = float64(iv.Elapsed) / 1e9
		v.OutBps = float64(iv.OutBytes) * 8 / v.Interval
	}
	v.Utilisation = iv.Utilisation()
	v.QueueBusy = iv.QueueBusy()
	if s.NotBottleneck {
		v.NotBottleneck = NotBottleneckLine(s.PathBps)
	}
	if busy := iv.CPU - iv.IdleCPU; iv.In > 0 && busy > 0 {
		us := float64(busy) / float64(iv.In) / 1e3
		v.CPUPerPkt = &us
	}
	ms := func(h *Histogram) MsQuantiles {
		f := func(ns int64) float64 { return figure.Ms(time.Duration(ns)) }
		return MsQuantiles{f(h.Quantile(0.5)), f(h.Quantile(0.99)), f(h.Max())}
	}
	v.SojournC, v.SojournL = ms(&iv.SojournC), ms(&iv.SojournL)
	l := &iv.Lateness
	v.Lateness = UsQuantiles{float64(l.Quantile(0.5)) / 1e3, float64(l.Quantile(0.99)) / 1e3, float64(l.Max()) / 1e3}
	v.Config = s.configRow()
	return v
}

// configRow is the configuration s was taken under.
func (s *DirStats) configRow() ConfigRow {
	c := ConfigRow{Qdisc: s.Kind, Params: map[string]any{}, RateBps: s.Bps, Rate: tcRate(s.Rate, s.Bps),
		Delay: s.Delay, Jitter: s.Jitter, Loss: s.Loss, Aggregate: s.Aggregate, ECNFault: s.Fault}
	switch s.Spec.Kind {
	case aqm.KindDualPI2:
		c.AlphaHz, c.BetaHz = aqm.GainHz(s.Spec.DualPI2.Alpha), aqm.GainHz(s.Spec.DualPI2.Beta)
	case aqm.KindDOCSIS:
		c.AlphaHz, c.BetaHz = aqm.GainHz(s.Spec.DOCSIS.DualPI2.Alpha), aqm.GainHz(s.Spec.DOCSIS.DualPI2.Beta)
	}
	p := s.Spec.TCParams()
	for _, x := range p {
		if x.Value == "" {
			c.Params[x.Name] = true
		} else {
			c.Params[x.Name] = x.Value
		}
	}
	c.TC = "qdisc " + s.Kind
	if line := aqm.TCLine(p); line != "" {
		c.TC += " " + line
	}
	c.Link = "rate " + c.Rate + " delay " + aqm.TCTime(s.Delay)
	if s.Jitter != "" {
		c.Link += " jitter " + s.Jitter
	}
	if s.Loss != "" {
		c.Link += " loss " + s.Loss
	}
	if s.Aggregate != "" {
		c.Link += " aggregate " + s.Aggregate
	}
	if s.Fault != "" {
		c.Link += " ecn-fault " + s.Fault
	}
	return c
}

// tcRate is a link rate as tc prints one ("10Mbit"): a constant rate in
// tc's capitalised units, anything else (unlimited, a trace) by its name.
func tcRate(name string, bps uint64) string {
	if bps == 0 {
		return name
	}
	r := shaper.FormatRate(bps)
	for _, u := range [...]string{"kbit", "mbit", "gbit", "tbit"} {
		if strings.HasSuffix(r, u) {
			return strings.TrimSuffix(r, u) + strings.ToUpper(u[:1]) + u[1:]
		}
	}
	return r
}

// WakeProbeRow is the machine's timing floor over the same interval: the
// wake-up probes' worst wake-up.
type WakeProbeRow struct {
	RealTime  bool    `json:"realtime"`
	CPUs      int     `json:"cpus"` // one probe thread pinned to each
	PeriodUs  float64 `json:"period_us"`
	WorstLate float64 `json:"worst_lateness_us"`
}

// Row returns the probe's figures over the interval since prev (an
// earlier snapshot's, nil: since the start), or nil when no probe ran.
func (f *WakeProbeStats) Row(prev *WakeProbeStats) *WakeProbeRow {
	if !f.Running && f.Wakes == 0 {
		return nil
	}
	worst := f.Worst.Max
	if prev != nil {
		worst, _ = f.Worst.Since(&prev.Worst)
	}
	return &WakeProbeRow{RealTime: f.RealTime, CPUs: f.CPUs, PeriodUs: float64(f.Period) / 1e3, WorstLate: float64(worst) / 1e3}
}

// since returns the counters Row turns into rates, over the interval
// since prev (all of s when prev is nil).
func (s *DirStats) since(prev *DirStats) DirStats {
	d := *s
	if prev == nil {
		return d
	}
	d.Elapsed -= prev.Elapsed
	d.Link.Busy -= prev.Link.Busy
	d.Link.Queued -= prev.Link.Queued
	d.OutBytes -= prev.OutBytes
	d.CPU -= prev.CPU
	d.CPUSys -= prev.CPUSys
	d.IdleCPU -= prev.IdleCPU
	d.In -= prev.In
	d.SojournC = s.SojournC.Sub(&prev.SojournC)
	d.SojournL = s.SojournL.Sub(&prev.SojournL)
	d.Lateness = s.Lateness.Sub(&prev.Lateness)
	return d
}
