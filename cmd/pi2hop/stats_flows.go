package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/pi2hop/pi2hop/instance"
)

func runStatsFlows(ctx context.Context, w io.Writer, a *statsArgs) error {
	for first := true; ; first = false {
		snap, tables, clients, err := instance.StatsFlows(a.name, a.top)
		if err != nil {
			return err
		}
		dirs := instance.FlowsViews(tables, clients)
		if a.json {
			b, err := instance.FlowsJSON(snap, dirs)
			if err != nil {
				return err
			}
			fmt.Fprintf(w, "%s\n", b)
		} else {
			if !first {
				fmt.Fprintln(w)
			}
			fmt.Fprintf(w, "instance %s  %s\n", snap.Name, snap.Up.Taken.Format(time.TimeOnly))
			for i := range dirs {
				instance.WriteFlows(w, &dirs[i], len(clients) > 0)
			}
		}
		if a.every == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(a.every):
		}
	}
}
