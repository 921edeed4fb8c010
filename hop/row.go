package hop

import (
	"time"

	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/figure"
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
	// The other kinds' tc -s xstats, under their qdisc's name.
	CoDel   *CodelXStats   `json:"codel,omitempty"`
	PIE     *PIEXStats     `json:"pie,omitempty"`
	FQCodel *FQCodelXStats `json:"fq_codel,omitempty"`
	QProt   *QProtXStats   `json:"queue_protection,omitempty"`
	// link
	Rate        string            `json:"rate"`
	Delay       string            `json:"delay"`
	Interval    float64           `json:"interval_s"`
	InPkts      uint64            `json:"in_packets"`
	InBytes     uint64            `json:"in_bytes"`
	OutPkts     uint64            `json:"out_packets"`
	OutBytes    uint64            `json:"out_bytes"`
	OutBps      float64           `json:"out_bits_per_second"`
	Utilisation float64           `json:"utilisation"`
	Marked      uint64            `json:"marked"`
	Malformed   uint64            `json:"malformed"`
	Drops       map[string]uint64 `json:"drops"` // by aqm.Reason name, and nobuffer, write
	Pending     int               `json:"pending"`
	SojournC    [2]float64        `json:"sojourn_c_ms"` // p50, p99
	SojournL    [2]float64        `json:"sojourn_l_ms"`
	Lateness    [2]float64        `json:"lateness_us"`       // driver's pacing error p50, p99
	WorstLate   float64           `json:"worst_lateness_us"` // its largest value, measured
	RingDrops   uint64            `json:"tun_ring_drops"`
	CPUPerPkt   float64           `json:"cpu_us_per_packet"` // the direction's owner thread (includes kernel work done in its writes)
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
		Rate: s.Rate, Delay: time.Duration(s.Delay).String(),
		InPkts: s.In, InBytes: s.InBytes, OutPkts: s.Out, OutBytes: s.OutBytes,
		Marked: s.Marked, Malformed: s.Malformed, Pending: s.Pending, RingDrops: s.RingDrops,
		Drops: map[string]uint64{"nobuffer": s.NoBuffer, "write": s.WriteErrors},
	}
	for r, n := range s.QueueDrops {
		if name := aqm.Reason(r).String(); name != "" {
			v.Drops[name] = n
		}
	}
	v.addXStats(&q)
	iv := s.since(prev)
	if iv.Elapsed > 0 {
		v.Interval = float64(iv.Elapsed) / 1e9
		v.OutBps = float64(iv.OutBytes) * 8 / v.Interval
	}
	v.Utilisation = iv.Utilisation()
	if iv.In > 0 && iv.CPU > 0 {
		v.CPUPerPkt = float64(iv.CPU) / float64(iv.In) / 1e3
	}
	ms := func(h *Histogram, q float64) float64 { return figure.Ms(time.Duration(h.Quantile(q))) }
	v.SojournC = [2]float64{ms(&iv.SojournC, 0.5), ms(&iv.SojournC, 0.99)}
	v.SojournL = [2]float64{ms(&iv.SojournL, 0.5), ms(&iv.SojournL, 0.99)}
	v.Lateness = [2]float64{float64(iv.Lateness.Quantile(0.5)) / 1e3, float64(iv.Lateness.Quantile(0.99)) / 1e3}
	worst := s.Worst.Max
	if prev != nil {
		worst, _ = s.Worst.Since(&prev.Worst)
	}
	v.WorstLate = float64(worst) / 1e3
	return v
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
