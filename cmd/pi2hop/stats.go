package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/pi2hop/pi2hop/hop"
	"github.com/pi2hop/pi2hop/instance"
	"github.com/pi2hop/pi2hop/internal/flagvalue"
	"github.com/pi2hop/pi2hop/lan"
	"github.com/pi2hop/pi2hop/shaper"
	"github.com/spf13/pflag"
)

// pi2hop stats: ask a running instance (run or shell) for its counters and
// print, per direction, what `tc -s qdisc show` prints for dualpi2 plus
// the link's figures. With --every the rates and sojourn quantiles are
// those of the last interval.

var statsCmd = &command{
	name:  "stats",
	short: "show a running hop's queue and link statistics",
	usage: "stats [--name N] [--json] [--every 1s] [--flows [--top N]]",
	examples: []example{
		{"pi2hop stats", "the running hop's queues and link, once"},
		{"pi2hop stats --every 1s", "again every second, figures per second"},
		{"pi2hop stats --flows --top 20", "the 20 busiest flows each way: L4S or not, marks, delay, verdict"},
	},
	flags: statsFlags,
	linux: "a local instance started by run, shell or share",
}

type statsArgs struct {
	name  string
	json  bool
	every time.Duration
	flows bool
	top   int
}

func statsFlags(fs *pflag.FlagSet) func(context.Context, *cmdEnv, []string) error {
	a := &statsArgs{}
	fs.StringVar(&a.name, "name", "", pickNameUsage)
	jsonFlag(fs, &a.json, "print JSON: one object per snapshot")
	fs.Var((*flagvalue.Time)(&a.every), "every", "print again once per `period` (e.g. 1s) until interrupted; figures are per period")
	alias(fs, "watch", "every") // --watch before this release
	fs.BoolVar(&a.flows, "flows", false, "show each direction's flows instead: class, rate, sojourn, marks, drops and a verdict (L4S: DOCSIS queue protection's)")
	fs.IntVar(&a.top, "top", 10, "with --flows, the `number` of flows per direction, highest rate first (at most 4096)")
	return func(ctx context.Context, env *cmdEnv, args []string) error {
		if len(args) > 0 {
			return usagef("stats: unexpected argument %q", args[0])
		}
		if a.every < 0 || (a.every > 0 && a.every < 10*time.Millisecond) {
			return usagef("stats: --every %v: want 10ms or more", a.every)
		}
		if fs.Changed("top") && !a.flows {
			return usagef("stats: --top %d: only with --flows", a.top)
		}
		if a.top < 1 || a.top > hop.FlowTableSize {
			return usagef("stats: --top %d: want 1..%d", a.top, hop.FlowTableSize)
		}
		name, err := pickInstance(a.name)
		if err != nil {
			return fmt.Errorf("stats: %w", err)
		}
		a.name = name
		if a.flows {
			return runStatsFlows(ctx, env.stdout, a)
		}
		return runStats(ctx, env.stdout, a)
	}
}

func runStats(ctx context.Context, w io.Writer, a *statsArgs) error {
	var prev *hop.Snapshot
	for {
		cur, clients, err := instance.StatsAndClients(a.name)
		if err != nil {
			return err
		}
		rows := [2]hop.StatsRow{cur.Up.Row(prevDir(prev, hop.Up)), cur.Down.Row(prevDir(prev, hop.Down))}
		var prevFloor *hop.WakeProbeStats
		if prev != nil {
			prevFloor = &prev.WakeProbe
		}
		fl := cur.WakeProbe.Row(prevFloor)
		if a.json {
			b, err := statsJSON(cur, rows, fl, clients)
			if err != nil {
				return err
			}
			fmt.Fprintf(w, "%s\n", b)
		} else {
			if prev != nil {
				fmt.Fprintln(w)
			}
			fmt.Fprintf(w, "instance %s  %s\n", cur.Name, cur.Up.Taken.Format(time.TimeOnly))
			for _, v := range rows {
				writeDirRow(w, &v)
			}
			writeWakeProbeRow(w, fl)
			writeClients(w, clientViews(clients, cur.Up.Taken))
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

// statsJSON is one snapshot as stats --json prints it (docs/json.md).
func statsJSON(cur *hop.Snapshot, rows [2]hop.StatsRow, fl *hop.WakeProbeRow, clients []lan.Client) ([]byte, error) {
	return json.Marshal(struct {
		Name    string            `json:"name"`
		Time    time.Time         `json:"time"`
		Dirs    [2]hop.StatsRow   `json:"directions"`
		Floor   *hop.WakeProbeRow `json:"floor,omitempty"`
		Clients []clientView      `json:"clients,omitempty"`
	}{cur.Name, cur.Up.Taken, rows, fl, clientViews(clients, cur.Up.Taken)})
}

func prevDir(s *hop.Snapshot, d hop.Dir) *hop.DirStats {
	if s == nil {
		return nil
	}
	return s.Dir(d)
}

func writeDirRow(w io.Writer, v *hop.StatsRow) {
	path := "client -> server"
	if v.Dir == "down" {
		path = "server -> client"
	}
	fmt.Fprintf(w, "%s (%s):\n", v.Dir, path)
	fmt.Fprintf(w, " %s\n", v.Config.TC)
	fmt.Fprintf(w, " link %s\n", v.Config.Link)
	fmt.Fprintf(w, " Sent %d bytes %d pkt (dropped %d, overlimits %d requeues 0)\n", v.SentBytes, v.SentPkts, v.Dropped, v.Overlimits)
	fmt.Fprintf(w, " backlog %db %dp requeues 0\n", v.BacklogB, v.BacklogP)
	for _, l := range v.QdiscLines() {
		fmt.Fprintf(w, "  %s\n", l)
	}
	fmt.Fprintf(w, " link: %s out over %.1fs, utilisation %.1f%%\n",
		shaper.FormatRate(uint64(v.OutBps)), v.Interval, 100*v.Utilisation)
	fmt.Fprintf(w, "  in %d pkt %d bytes, out %d pkt %d bytes, pending %d, marked %d, malformed %d\n",
		v.InPkts, v.InBytes, v.OutPkts, v.OutBytes, v.Pending, v.Marked, v.Malformed)
	var drops []string
	for _, r := range hop.DropReasons(v.Qdisc) {
		drops = append(drops, fmt.Sprintf("%s %d", r, v.Drops[r]))
	}
	fmt.Fprintf(w, "  drops: %s; TUN ring drops %d\n", strings.Join(drops, ", "), v.RingDrops)
	if line := faultLine(v); line != "" {
		fmt.Fprintf(w, "  %s\n", line)
	}
	cpu := "-" // no packet read: no figure per packet
	if v.CPUPerPkt != nil {
		cpu = fmt.Sprintf("%.1fus", *v.CPUPerPkt)
	}
	c, l, late := v.SojournC, v.SojournL, v.Lateness
	fmt.Fprintf(w, "  sojourn C p50 %.2fms p99 %.2fms max %.2fms, L p50 %.2fms p99 %.2fms max %.2fms\n", c.P50, c.P99, c.Max, l.P50, l.P99, l.Max)
	fmt.Fprintf(w, "  pacing lateness p50 %.0fus p99 %.0fus worst %.0fus; cpu %s/pkt\n", late.P50, late.P99, late.Max, cpu)
}

// faultLine says which ECN path fault is on and what it did, by kind; ""
// when no fault is set and none ever acted.
func faultLine(v *hop.StatsRow) string {
	var counts []string
	for _, k := range shaper.FaultKinds()[1:] {
		if n := v.ECNFaults[k]; n > 0 {
			counts = append(counts, fmt.Sprintf("%s %d", k, n))
		}
	}
	if v.Config.ECNFault == "" && len(counts) == 0 {
		return ""
	}
	spec := v.Config.ECNFault
	if spec == "" {
		spec = "none"
	}
	if len(counts) == 0 {
		counts = []string{"no packet yet"}
	}
	return fmt.Sprintf("ecn fault %s: rewrote or dropped %s", spec, strings.Join(counts, ", "))
}

// writeWakeProbeRow prints the wake-up probes' line (nothing without a probe).
func writeWakeProbeRow(w io.Writer, v *hop.WakeProbeRow) {
	if v == nil {
		return
	}
	class := "SCHED_FIFO"
	if !v.RealTime {
		class = "normal (no real-time privilege)"
	}
	fmt.Fprintf(w, "machine floor: %s probes on %d CPUs sleeping %.0fus woke at worst %.0fus late\n", class, v.CPUs, v.PeriodUs, v.WorstLate)
}
