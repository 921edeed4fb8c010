// Command pi2hop is a software L4S bottleneck: a forwarding hop with
// DualPI2 (RFC 9332) queue management, a lab around it, and capture
// analysis. See `pi2hop help`.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/pi2hop/pi2hop/internal/brokenstdio"
	"github.com/pi2hop/pi2hop/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	ctx, cancel := context.WithCancel(ctx)
	go brokenstdio.Watch(cancel)
	err := Run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(cli.ExitCode(app.Name, err, os.Stderr))
}
