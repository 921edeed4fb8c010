package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/pi2hop/pi2hop/hop"
	"github.com/pi2hop/pi2hop/instance"
	"github.com/pi2hop/pi2hop/internal/clidoc"
	"github.com/pi2hop/pi2hop/internal/flagvalue"
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
	clidoc.JSONFlag(fs, &a.json, "print JSON: one object per snapshot")
	fs.Var((*flagvalue.Time)(&a.every), "every", "print again once per `period` (e.g. 1s) until interrupted; figures are per period")
	clidoc.Alias(fs, "watch", "every") // --watch before this release
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
		cur, clients, conns, err := instance.StatsAndClients(a.name)
		if err != nil {
			return err
		}
		rows := [2]hop.StatsRow{cur.Up.Row(prevDir(prev, hop.Up)), cur.Down.Row(prevDir(prev, hop.Down))}
		var prevProbe *hop.WakeProbeStats
		if prev != nil {
			prevProbe = &prev.WakeProbe
		}
		fl := cur.WakeProbe.Row(prevProbe)
		if a.json {
			b, err := instance.StatsJSON(cur, rows, fl, clients, conns)
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
				instance.WriteDirRow(w, &v)
			}
			instance.WriteWakeProbeRow(w, fl)
			instance.WriteClients(w, instance.ClientViews(clients, cur.Up.Taken))
			instance.WriteConns(w, conns)
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
