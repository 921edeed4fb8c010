package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/dist"
	"github.com/pi2hop/pi2hop/hop"
	"github.com/pi2hop/pi2hop/hop/instance"
	"github.com/pi2hop/pi2hop/shaper"
	"github.com/spf13/pflag"
)

// pi2hop stats: ask a running instance (run or shell) for its counters and
// print, per direction, what `tc -s qdisc show` prints for dualpi2 plus
// the link's figures. With --every the rates and sojourn quantiles are
// those of the last interval.

func init() {
	register(&command{
		name:  "stats",
		short: "show a running hop's queue and link statistics",
		usage: "stats [--name N] [--json] [--every 1s]",
		flags: statsFlags,
	})
}

type statsArgs struct {
	name  string
	json  bool
	every time.Duration
}

func statsFlags(fs *pflag.FlagSet) func(context.Context, *cmdEnv, []string) error {
	a := &statsArgs{}
	fs.StringVar(&a.name, "name", defaultInstance, "instance `name` (as given to run or shell)")
	jsonFlag(fs, &a.json, "print JSON: one object per snapshot")
	fs.DurationVar(&a.every, "every", 0, "print again once per `period` (e.g. 1s) until interrupted; figures are per period")
	alias(fs, "watch", "every") // --watch before this release
	return func(ctx context.Context, env *cmdEnv, args []string) error {
		if len(args) > 0 {
			return usagef("stats: unexpected argument %q", args[0])
		}
		if a.every < 0 || (a.every > 0 && a.every < 10*time.Millisecond) {
			return usagef("stats: --every %v: want 10ms or more", a.every)
		}
		return runStats(ctx, env.stdout, a)
	}
}

func runStats(ctx context.Context, w io.Writer, a *statsArgs) error {
	var prev *hop.Snapshot
	for {
		cur, err := instance.Stats(a.name)
		if err != nil {
			return err
		}
		views := [2]dirView{viewOf(&cur.Up, prevDir(prev, hop.Up)), viewOf(&cur.Down, prevDir(prev, hop.Down))}
		if a.json {
			b, err := json.Marshal(struct {
				Name string     `json:"name"`
				Time time.Time  `json:"time"`
				Dirs [2]dirView `json:"directions"`
			}{cur.Name, cur.Up.Taken, views})
			if err != nil {
				return err
			}
			fmt.Fprintf(w, "%s\n", b)
		} else {
			if prev != nil {
				fmt.Fprintln(w)
			}
			fmt.Fprintf(w, "instance %s  %s\n", cur.Name, cur.Up.Taken.Format(time.TimeOnly))
			for _, v := range views {
				writeDirView(w, &v)
			}
		}
		if a.every == 0 {
			return nil
		}
		prev = cur
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(a.every):
		}
	}
}

func prevDir(s *hop.Snapshot, d hop.Dir) *hop.DirStats {
	if s == nil {
		return nil
	}
	return s.Dir(d)
}

// dirView is one direction as printed: tc's dualpi2 statistics (same
// names and units: delays in µs) and the link's. Rates, utilisation and
// sojourn quantiles cover the interval since the previous snapshot, or
// the whole run.
type dirView struct {
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
	Drops       map[string]uint64 `json:"drops"`
	Pending     int               `json:"pending"`
	SojournC    [2]float64        `json:"sojourn_c_ms"` // p50, p99
	SojournL    [2]float64        `json:"sojourn_l_ms"`
	Lateness    [2]float64        `json:"lateness_us"` // driver's pacing error p50, p99
	RingDrops   uint64            `json:"tun_ring_drops"`
	CPUPerPkt   float64           `json:"cpu_us_per_packet"` // the direction's owner thread (includes kernel work done in its writes)
}

func viewOf(s, prev *hop.DirStats) dirView {
	q := s.Queue
	v := dirView{
		Dir: s.Dir.String(), Qdisc: s.Kind,
		SentBytes: q.SentBytes, SentPkts: q.SentPackets, Dropped: q.Dropped, Overlimits: q.Overlimits,
		BacklogB: q.BacklogBytes, BacklogP: q.BacklogPkts,
		Prob: aqm.ProbFloat(q.Prob), DelayCus: q.DelayC / 1000, DelayLus: q.DelayL / 1000,
		PktsInC: q.PktsInC, PktsInL: q.PktsInL, MaxQ: q.MaxQ, ECNMark: q.ECNMark, StepMarks: q.StepMarks,
		Credit: q.Credit, MemUsed: q.MemoryUsed, MemMax: q.MaxMemoryUsed, MemLimit: q.MemoryLimit,
		Rate: s.Rate, Delay: fmtDuration(s.Delay),
		InPkts: s.In, InBytes: s.InBytes, OutPkts: s.Out, OutBytes: s.OutBytes,
		Marked: s.Marked, Malformed: s.Malformed, Pending: s.Pending, RingDrops: s.RingDrops,
		Drops: map[string]uint64{"nobuffer": s.NoBuffer, "write": s.WriteErrors},
	}
	for r, n := range s.QueueDrops {
		if name := aqm.Reason(r).String(); name != "" {
			v.Drops[name] = n
		}
	}
	elapsed, busy, outBytes, cpu, in := s.Elapsed, s.Link.Busy, s.OutBytes, s.CPU, s.In
	sc, sl, late := s.SojournC, s.SojournL, s.Lateness
	if prev != nil {
		elapsed, busy, outBytes = s.Elapsed-prev.Elapsed, busy-prev.Link.Busy, outBytes-prev.OutBytes
		cpu, in = cpu-prev.CPU, in-prev.In
		sc, sl, late = s.SojournC.Sub(&prev.SojournC), s.SojournL.Sub(&prev.SojournL), s.Lateness.Sub(&prev.Lateness)
	}
	if elapsed > 0 {
		v.Interval = float64(elapsed) / 1e9
		v.OutBps = float64(outBytes) * 8 / v.Interval
		v.Utilisation = float64(busy) / float64(elapsed)
	}
	if in > 0 && cpu > 0 {
		v.CPUPerPkt = float64(cpu) / float64(in) / 1e3
	}
	ms := func(h *hop.Histogram, q float64) float64 { return dist.Ms(time.Duration(h.Quantile(q))) }
	v.SojournC = [2]float64{ms(&sc, 0.5), ms(&sc, 0.99)}
	v.SojournL = [2]float64{ms(&sl, 0.5), ms(&sl, 0.99)}
	v.Lateness = [2]float64{float64(late.Quantile(0.5)) / 1e3, float64(late.Quantile(0.99)) / 1e3}
	return v
}

func writeDirView(w io.Writer, v *dirView) {
	path := "client -> server"
	if v.Dir == "down" {
		path = "server -> client"
	}
	fmt.Fprintf(w, "%s (%s): qdisc %s\n", v.Dir, path, v.Qdisc)
	fmt.Fprintf(w, " Sent %d bytes %d pkt (dropped %d, overlimits %d requeues 0)\n", v.SentBytes, v.SentPkts, v.Dropped, v.Overlimits)
	fmt.Fprintf(w, " backlog %db %dp requeues 0\n", v.BacklogB, v.BacklogP)
	if v.Qdisc == aqm.KindDualPI2 {
		fmt.Fprintf(w, "  prob %f delay_c %dus delay_l %dus\n", v.Prob, v.DelayCus, v.DelayLus)
		fmt.Fprintf(w, "  pkts_in_c %d pkts_in_l %d maxq %d\n", v.PktsInC, v.PktsInL, v.MaxQ)
		fmt.Fprintf(w, "  ecn_mark %d step_marks %d\n", v.ECNMark, v.StepMarks)
		next := "L"
		if v.Credit > 0 {
			next = "C"
		}
		fmt.Fprintf(w, "  credit %d (%s)\n", v.Credit, next)
		fmt.Fprintf(w, "  memory used: %d (max: %d) of %dB\n", v.MemUsed, v.MemMax, v.MemLimit)
	}
	fmt.Fprintf(w, " link: rate %s delay %s, %s out over %.1fs, utilisation %.1f%%\n",
		v.Rate, v.Delay, shaper.FormatRate(uint64(v.OutBps)), v.Interval, 100*v.Utilisation)
	fmt.Fprintf(w, "  in %d pkt %d bytes, out %d pkt %d bytes, pending %d, marked %d, malformed %d\n",
		v.InPkts, v.InBytes, v.OutPkts, v.OutBytes, v.Pending, v.Marked, v.Malformed)
	var drops []string
	for _, r := range []string{"classic", "coupled", "step", "overload", "limit", "loss", "nobuffer", "write"} {
		drops = append(drops, fmt.Sprintf("%s %d", r, v.Drops[r]))
	}
	fmt.Fprintf(w, "  drops: %s; TUN ring drops %d\n", strings.Join(drops, ", "), v.RingDrops)
	fmt.Fprintf(w, "  sojourn C p50 %.2fms p99 %.2fms, L p50 %.2fms p99 %.2fms; pacing lateness p50 %.0fus p99 %.0fus; cpu %.1fus/pkt\n",
		v.SojournC[0], v.SojournC[1], v.SojournL[0], v.SojournL[1], v.Lateness[0], v.Lateness[1], v.CPUPerPkt)
}

// fmtDuration prints ns as a Go duration ("10ms", "0s").
func fmtDuration(ns int64) string { return time.Duration(ns).String() }
