package main

import (
	"bytes"
	"io"
	"sync"

	"github.com/pi2hop/pi2hop/internal/cli"
	"github.com/spf13/pflag"
)

// lockedBuffer is a bytes.Buffer for a child's output read while it runs.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (w *lockedBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *lockedBuffer) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// Shorthands for the command framework (package cli) that tests of
// commands use.
type usageError = cli.UsageError

func topCommand(name string) *cli.Command      { return app.Command(name) }
func newFlagSet(c *cli.Command) *pflag.FlagSet { return app.NewFlagSet(c) }
func exitCode(err error, stderr io.Writer) int { return cli.ExitCode(app.Name, err, stderr) }
