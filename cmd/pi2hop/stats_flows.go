package main

import (
	"context"
	"io"

	"github.com/pi2hop/pi2hop/instance"
)

func runStatsFlows(ctx context.Context, w io.Writer, a *statsArgs) error {
	return instance.WatchFlows(ctx, w, a.name, instance.FlowsOptions{Top: a.top, JSON: a.json, Every: a.every})
}
