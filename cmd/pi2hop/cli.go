package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/pi2hop/pi2hop/internal/cli"
	"github.com/pi2hop/pi2hop/shaper"
	"github.com/spf13/pflag"
)

// app is pi2hop's command line; package cli dispatches, parses and helps
// from it. Its commands, in the order `pi2hop help` lists them, are the
// one place that names them; filled in init because help and completion
// read app from their run functions.
var app = &cli.Program{
	Name:       "pi2hop",
	Short:      "a software L4S bottleneck (DualPI2, RFC 9332) for Linux",
	FlagGroups: []string{"link", "queue", "capture", "output", "instance"},
	GroupOf: map[string]string{
		"capture": "capture", "snaplen": "capture", "capture-max-size": "capture",
		"json": "output", "every": "output", "verbose": "output", "log-format": "output", "plot-format": "output",
		"name": "instance", "metrics": "instance", "cpu-latency": "instance", "floor-probe": "instance",
		"tun": "instance", "cleanup": "instance",
	},
	Title:  queueTitle,
	Narrow: focusQueue,
}

func init() {
	for _, c := range []*command{shareCmd, runCmd, shellCmd, statsCmd, setCmd, configCmd, labCmd, flowCmd, checkCmd, replayCmd, analyzeCmd, profilesCmd, helpCmd} {
		app.Commands = append(app.Commands, c.cli())
	}
	app.Commands = append(app.Commands, app.CompletionCommand(), versionCmd.cli())
	app.Init()
}

// command is a command as this package declares it (cli.Command, with
// the run function taking a cmdEnv).
type command struct {
	name, short, usage, long string
	examples                 []example
	flags                    func(fs *pflag.FlagSet) func(ctx context.Context, env *cmdEnv, args []string) error
	subs                     []*command
	argFiles                 bool
	argWords                 func() []string
	linux                    string
}

// example is one command line of a command's help and what it does.
type example struct{ line, what string }

// cmdEnv is what a command may touch of the outside world.
type cmdEnv struct {
	stdin          io.Reader
	stdout, stderr io.Writer
}

func (c *command) cli() *cli.Command {
	cc := &cli.Command{Name: c.name, Short: c.short, Usage: c.usage, Long: c.long, ArgFiles: c.argFiles, ArgWords: c.argWords, Linux: c.linux}
	if c.flags != nil {
		cc.Flags = func(fs *pflag.FlagSet) cli.RunFunc {
			run := c.flags(fs)
			return func(ctx context.Context, e *cli.Env, args []string) error {
				return run(ctx, &cmdEnv{e.Stdin, e.Stdout, e.Stderr}, args)
			}
		}
	}
	for _, e := range c.examples {
		cc.Examples = append(cc.Examples, cli.Example{Line: e.line, What: e.what})
	}
	for _, s := range c.subs {
		cc.Subs = append(cc.Subs, s.cli())
	}
	return cc
}

// Run runs pi2hop with args (without the program name).
func Run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	return app.Run(ctx, args, &cli.Env{Stdin: stdin, Stdout: stdout, Stderr: stderr})
}

var usagef = cli.Usagef

// configError is a failure to resolve the link flags: a usage error, but
// for a file that could not be read or parsed (exit 1, not 2).
func configError(command string, err error) error {
	if fe := (*shaper.FileError)(nil); errors.As(err, &fe) {
		return fmt.Errorf("%s: %w", command, err)
	}
	return usagef("%s: %v", command, err)
}

// queueTitle words the queue flags' heading: how to see one kind's, or
// which kind's they are.
func queueTitle(c *cli.Command, fs *pflag.FlagSet, g, kind string) string {
	switch {
	case g == "queue" && fs.Lookup("aqm") != nil && kind == "":
		return fmt.Sprintf("Queue flags (each kind takes its own; 'pi2hop help %s --aqm KIND' shows one kind's with its defaults)", c.Path())
	case g == "queue" && kind != "" && c.Path() == "set":
		return "Queue flags of " + kind // set changes from what runs: no defaults
	case g == "queue" && kind != "":
		return "Queue flags of " + kind + ", with its defaults"
	}
	return ""
}
