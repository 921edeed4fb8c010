package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
)

// command is one subcommand. Each lives in its own file and registers
// itself from init, so the dispatcher knows none of them by name.
type command struct {
	name  string // as typed: "replay"
	short string // one line for the command list
	usage string // synopsis after "pi2hop ": "replay [flags] --trace FILE"
	// flags declares the command's flags on fs and returns the function
	// that runs the command once they are parsed; args are the positional
	// arguments (after "--" too).
	flags func(fs *pflag.FlagSet) func(ctx context.Context, env *cmdEnv, args []string) error
}

// cmdEnv is what a command may touch of the outside world, so tests can
// run commands in-process.
type cmdEnv struct {
	stdin          io.Reader
	stdout, stderr io.Writer
}

var commands = map[string]*command{}

func register(c *command) {
	if _, dup := commands[c.name]; dup {
		panic("pi2hop: command registered twice: " + c.name)
	}
	commands[c.name] = c
}

// usageError is a mistake in the command line: printed with a hint, exit 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, a ...any) error { return &usageError{fmt.Sprintf(format, a...)} }

// exitError carries a child's exit status through (pi2hop shell).
type exitError struct{ code int }

func (e *exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

// Run runs pi2hop with args (without the program name).
func Run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	env := &cmdEnv{stdin: stdin, stdout: stdout, stderr: stderr}
	if len(args) == 0 {
		printUsage(stderr)
		return usagef("no command given")
	}
	name := args[0]
	switch name {
	case "help", "-h", "--help":
		if len(args) > 1 {
			if c, ok := commands[args[1]]; ok {
				fs := newFlagSet(c)
				c.flags(fs)
				printCommandUsage(stdout, c, fs)
				return nil
			}
			return usagef("unknown command %q", args[1])
		}
		printUsage(stdout)
		return nil
	}
	c, ok := commands[name]
	if !ok {
		printUsage(stderr)
		return usagef("unknown command %q", name)
	}
	fs := newFlagSet(c)
	run := c.flags(fs)
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			printCommandUsage(stdout, c, fs)
			return nil
		}
		return usagef("%s: %v", name, flagError(err))
	}
	return run(ctx, env, fs.Args())
}

// flagError rewrites pflag's "invalid argument "x" for "--flag" flag: why"
// into the shorter form used across pi2hop: --flag "x": why. Parsers
// that quote the value themselves (shaper's units) are not quoted twice.
func flagError(err error) error {
	var bad *pflag.InvalidValueError
	if !errors.As(err, &bad) {
		return err
	}
	cause := errors.Unwrap(bad)
	if strings.HasPrefix(cause.Error(), strconv.Quote(bad.GetValue())+":") {
		return fmt.Errorf("--%s %w", bad.GetFlag().Name, cause)
	}
	return fmt.Errorf("--%s %q: %w", bad.GetFlag().Name, bad.GetValue(), cause)
}

func newFlagSet(c *command) *pflag.FlagSet {
	fs := pflag.NewFlagSet("pi2hop "+c.name, pflag.ContinueOnError)
	fs.SortFlags = false
	fs.SetOutput(io.Discard) // Run reports errors itself
	fs.SetInterspersed(true)
	return fs
}

func printUsage(w io.Writer) {
	fmt.Fprintln(w, "pi2hop: a software L4S bottleneck (DualPI2, RFC 9332) for Linux")
	fmt.Fprintln(w, "\nUsage: pi2hop COMMAND [flags]\n\nCommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, commands[n].short)
	}
	fmt.Fprintln(w, "\nRun 'pi2hop help COMMAND' for a command's flags.")
}

func printCommandUsage(w io.Writer, c *command, fs *pflag.FlagSet) {
	fmt.Fprintf(w, "Usage: pi2hop %s\n\n%s\n", c.usage, c.short)
	if u := fs.FlagUsages(); strings.TrimSpace(u) != "" {
		fmt.Fprintf(w, "\nFlags:\n%s", u)
	}
}

// exitCode prints err (if any) and maps it to the process exit status.
func exitCode(err error, stderr io.Writer) int {
	if err == nil {
		return 0
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	fmt.Fprintf(stderr, "pi2hop: %v\n", err)
	var ue *usageError
	if errors.As(err, &ue) {
		fmt.Fprintln(stderr, "Run 'pi2hop help' for usage.")
		return 2
	}
	return 1
}
