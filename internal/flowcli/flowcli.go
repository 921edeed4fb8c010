// Package flowcli is `pi2hop flow`'s subcommands: each one's synopsis,
// examples and flags in one table, and the step from parsed flags to the
// config of one call into package flow and its report. The command
// framework (help, dispatch, exit codes) is package cli's, and so is the
// usage error a mistake in a subcommand's flags returns.
package flowcli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/pi2hop/pi2hop/internal/cli"
	"github.com/spf13/pflag"
)

// Example is one command line of a subcommand's help and what it does.
type Example struct{ Line, What string }

// Command is one `pi2hop flow` subcommand.
type Command struct {
	Name     string // as typed: "prague-send"
	Synopsis string // flags after the name, as the usage line shows them
	Short    string // one line for the command list
	Examples []Example
	// declare declares the subcommand's flags on fs into a and returns
	// what runs once they are parsed.
	declare func(fs *pflag.FlagSet, a *args) func(ctx context.Context, env Env) error
}

// Env is what a subcommand writes to: reports to Stdout, notes to Stderr.
type Env struct{ Stdout, Stderr io.Writer }

// usagef is a mistake in the command line (a bad address, mode or
// combination of flags), its message naming the flag.
func usagef(format string, a ...any) error { return cli.Usagef(format, a...) }

// Declare declares c's flags on fs and returns the function that runs c
// once they are parsed. c takes no positional arguments; its errors
// other than usage errors are prefixed with its name.
func (c *Command) Declare(fs *pflag.FlagSet) func(ctx context.Context, env Env, args []string) error {
	run := c.declare(fs, new(args))
	return func(ctx context.Context, env Env, args []string) error {
		if len(args) > 0 {
			return usagef("flow %s: unexpected argument %q", c.Name, args[0])
		}
		err := run(ctx, env)
		var ue *cli.UsageError
		if err != nil && !errors.As(err, &ue) && !strings.HasPrefix(err.Error(), c.Name+":") {
			err = fmt.Errorf("%s: %w", c.Name, err)
		}
		return err
	}
}

// Commands are the subcommands, in the order help lists them; each has
// examples of both ends of a test.
var Commands = []*Command{
	{"prague-send", "--to ADDR:PORT [--ecn l4s|classic] [--max-rate R] [--rfc8888]", "send a UDP Prague flow (udp_prague wire format) to a prague-recv", []Example{
		{"pi2hop flow prague-send --to 10.254.1.2:5000", "an L4S Prague flow until interrupted"},
		{"pi2hop flow prague-send --to 10.254.1.2:5000 --ecn classic --duration 30s", "the same flow classic, for 30 s"},
	}, pragueSend},
	{"prague-recv", "--listen ADDR:PORT [--ecn l4s|classic] [--rfc8888]", "receive a UDP Prague flow and ACK every packet (or report them in blocks)", []Example{
		{"pi2hop flow prague-recv --listen :5000", "receive and ACK every packet"},
		{"pi2hop flow prague-recv --listen :5000 --rfc8888 --json", "feedback in RFC 8888 blocks, reports as JSON"},
	}, pragueRecv},
	{"video-send", "--to ADDR:PORT [--ecn l4s|classic] [--fps N]", "send a 30 fps video call over Prague congestion control", []Example{
		{"pi2hop flow video-send --to 10.254.1.2:6000", "a 30 fps call over L4S"},
		{"pi2hop flow video-send --to 10.254.1.2:6000 --ecn classic --fps 60", "a classic 60 fps call"},
	}, videoSend},
	{"video-recv", "--listen ADDR:PORT [--ecn l4s|classic]", "receive a video call: fps, stalls, frame delay, loss", []Example{
		{"pi2hop flow video-recv --listen :6000", "receive the call: fps, stalls, frame delay"},
		{"pi2hop flow video-recv --listen :6000 --json", "the same as JSON lines"},
	}, videoRecv},
	{"bulk", "--listen ADDR:PORT [--cc cubic] | --to ADDR:PORT", "kernel TCP bulk transfer: the server sends, the client measures goodput", []Example{
		{"pi2hop flow bulk --listen :7000 --cc cubic", "the sending side"},
		{"pi2hop flow bulk --to 10.254.1.1:7000 --duration 20s", "download for 20 s and print goodput"},
	}, bulk},
	{"probe", "--listen ADDR:PORT | --to ADDR:PORT [--ecn l4s|classic|ect0|ce] [--every 10ms]", "UDP round trips with a chosen ECN codepoint (L or C queue, both ways)", []Example{
		{"pi2hop flow probe --listen :8000", "echo probes back"},
		{"pi2hop flow probe --to 10.254.1.1:8000 --ecn l4s --every 10ms", "round trips through the L queue every 10 ms"},
	}, probe},
}
