package instance

import (
	"context"
	"fmt"
	"io"
	"time"
)

// FlowsOptions are what `pi2hop stats --flows` asks of a running instance.
type FlowsOptions struct {
	Top   int           // flows per direction, busiest first
	JSON  bool          // one FlowsJSON line per report, else tables
	Every time.Duration // report again once per period until ctx ends; 0: once
}

// WatchFlows prints the flow tables of the instance name to w as opt asks.
func WatchFlows(ctx context.Context, w io.Writer, name string, opt FlowsOptions) error {
	for first := true; ; first = false {
		snap, tables, clients, err := StatsFlows(name, opt.Top)
		if err != nil {
			return err
		}
		dirs := FlowsViews(tables, clients)
		if opt.JSON {
			b, err := FlowsJSON(snap, dirs)
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
				WriteFlows(w, &dirs[i], len(clients) > 0)
			}
		}
		if opt.Every == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(opt.Every):
		}
	}
}
