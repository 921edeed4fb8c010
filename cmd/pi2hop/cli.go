package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"

	"github.com/pi2hop/pi2hop/internal/clidoc"
	"github.com/pi2hop/pi2hop/internal/flagvalue"
	"github.com/pi2hop/pi2hop/shaper"
	"github.com/spf13/pflag"
)

// commands is every command, in the order `pi2hop help` lists them: the
// one place that names them. Each carries its synopsis, help, flags and
// run function; dispatch, help, the generated docs and the completion
// scripts all read this list. It is filled in init because help and
// completion read it from their run functions, which a package-level
// initialiser may not refer back to.
var commands []*command

func init() {
	commands = []*command{
		shareCmd, runCmd, shellCmd, statsCmd, setCmd,
		labCmd, flowCmd, checkCmd, replayCmd, analyzeCmd,
		profilesCmd, helpCmd, completionCmd, versionCmd,
	}
	for _, c := range commands {
		setParents(c)
	}
}

// command is one command or subcommand; a command with subs (flow) is a
// group whose subcommands are dispatched, parsed and helped by the same
// code.
type command struct {
	name  string // as typed: "replay", "prague-send"
	short string // one line for the command list
	usage string // synopsis after the parent's path: "replay [flags] --trace FILE"
	long  string // optional paragraph printed after short in the command's help
	// examples are command lines with what each does, as help lists them
	// ("pi2hop shell --rate 10mbit --delay 10ms -- ./app": "...").
	examples []example
	// flags declares the command's flags on fs and returns the function
	// that runs the command once they are parsed; args are the positional
	// arguments (after "--" too). nil for a group.
	flags func(fs *pflag.FlagSet) func(ctx context.Context, env *cmdEnv, args []string) error
	// subs are the subcommands, in the order help lists them.
	subs []*command
	// argFiles: the positional arguments are files or a command line;
	// argWords lists the words one may be. For completion.
	argFiles bool
	argWords func() []string
	// linux names what the command needs that only Linux has ("TUN
	// devices, netlink, nftables"); "" where it runs anywhere. Elsewhere
	// such a command and its subcommands exit 2 with one line saying so.
	linux  string
	parent *command // set from the list in init
}

// example is one command line of a command's help and what it does.
type example struct{ line, what string }

// path is the command as typed after "pi2hop": "flow prague-send".
func (c *command) path() string {
	if c.parent == nil {
		return c.name
	}
	return c.parent.path() + " " + c.name
}

func (c *command) sub(name string) *command {
	for _, s := range c.subs {
		if s.name == name {
			return s
		}
	}
	return nil
}

func (c *command) subNames() string {
	names := make([]string, len(c.subs))
	for i, s := range c.subs {
		names[i] = s.name
	}
	return strings.Join(names, ", ")
}

// cmdEnv is what a command may touch of the outside world, so tests can
// run commands in-process.
type cmdEnv struct {
	stdin          io.Reader
	stdout, stderr io.Writer
}

// topCommand returns the command named name, or nil.
func topCommand(name string) *command {
	for _, c := range commands {
		if c.name == name {
			return c
		}
	}
	return nil
}

func setParents(c *command) {
	for _, s := range c.subs {
		s.parent = c
		setParents(s)
	}
}

// lookup walks args down the command tree: the command args[0] names,
// then each subcommand the next argument names. It returns the deepest
// command found and the arguments after it.
func lookup(args []string) (*command, []string, error) {
	c := topCommand(args[0])
	if c == nil {
		names := make([]string, len(commands))
		for i, c := range commands {
			names[i] = c.name
		}
		return nil, nil, usagef("unknown command %q%s", args[0], clidoc.DidYouMean(args[0], "", names))
	}
	rest := args[1:]
	for len(c.subs) > 0 && len(rest) > 0 {
		s := c.sub(rest[0])
		if s == nil {
			break
		}
		c, rest = s, rest[1:]
	}
	return c, rest, nil
}

// usageError is a mistake in the command line: printed with a hint
// naming the command's help (cmd, its path), exit 2.
type usageError struct{ msg, cmd string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, a ...any) error { return &usageError{msg: fmt.Sprintf(format, a...)} }

// configError is a failure to resolve the link flags: a usage error, but
// for a file that could not be read or parsed (exit 1, not 2).
func configError(command string, err error) error {
	if fe := (*shaper.FileError)(nil); errors.As(err, &fe) {
		return fmt.Errorf("%s: %w", command, err)
	}
	return usagef("%s: %v", command, err)
}

// inCommand names c in a usage error that names no command yet, so its
// hint points at c's help.
func inCommand(err error, c *command) error {
	var ue *usageError
	if errors.As(err, &ue) && ue.cmd == "" && c != helpCmd {
		ue.cmd = c.path()
	}
	return err
}

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
	switch args[0] {
	case "-h", "--help":
		args = append([]string{"help"}, args[1:]...)
	case "-V", "--version":
		args = append([]string{"version"}, args[1:]...)
	}
	c, rest, err := lookup(args)
	if err != nil {
		return err
	}
	fs, run := declare(c)
	if len(c.subs) > 0 {
		fs.SetInterspersed(false) // a word after the group's flags is a subcommand
	}
	if err := fs.Parse(rest); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			printCommandUsage(stdout, c)
			return nil
		}
		return inCommand(usagef("%s: %v", c.path(), clidoc.FlagError(fs, err)), c)
	}
	if err := flagvalue.BareValue(fs, rest, isCommand); err != nil {
		return inCommand(usagef("%s: %v", c.path(), err), c)
	}
	for _, w := range flagvalue.ByteRateWarnings(fs, rest) {
		fmt.Fprintf(stderr, "pi2hop: warning: %s\n", w)
	}
	warnDeprecated(fs, c, stderr)
	if len(c.subs) > 0 {
		if fs.NArg() == 0 {
			return inCommand(usagef("%s: no subcommand given (want %s)", c.path(), c.subNames()), c)
		}
		return inCommand(unknownSub(c, fs.Arg(0)), c)
	}
	if err := needsLinux(c, goos); err != nil {
		return err
	}
	return inCommand(run(ctx, env, fs.Args()), c)
}

// flagGroups are the headings of a command's flags, in help's order;
// its own flags (no group) come first.
var flagGroups = []string{"link", "queue", "capture", "output", "instance"}

// groupOf places the flags shared across commands that declare no group
// themselves.
var groupOf = map[string]string{
	"capture": "capture", "snaplen": "capture", "capture-max-size": "capture",
	"json": "output", "every": "output", "verbose": "output", "log-format": "output", "plot-format": "output",
	"name": "instance", "metrics": "instance", "cpu-latency": "instance", "floor-probe": "instance",
	"tun": "instance", "cleanup": "instance",
}

// groupTitle is a group's heading in help.
func groupTitle(g string) string {
	switch g {
	case "":
		return "Flags"
	case "link":
		return "Link flags"
	case "queue":
		return "Queue flags"
	}
	return strings.ToUpper(g[:1]) + g[1:] + " flags"
}

// declare makes c's flag set: its flags, each placed under its heading,
// and the function that runs c (nil for a group).
func declare(c *command) (*pflag.FlagSet, func(context.Context, *cmdEnv, []string) error) {
	fs := newFlagSet(c)
	var run func(context.Context, *cmdEnv, []string) error
	if c.flags != nil {
		run = c.flags(fs)
	}
	fs.VisitAll(func(f *pflag.Flag) {
		if g, ok := groupOf[f.Name]; ok && f.Annotations[clidoc.GroupAnnotation] == nil {
			clidoc.Annotate(fs, f.Name, clidoc.GroupAnnotation, g)
		}
	})
	return fs, run
}

func unknownSub(c *command, name string) error {
	if len(c.subs) == 0 {
		return usagef("%s: unexpected argument %q", c.path(), name)
	}
	return usagef("%s: unknown subcommand %q (want %s)%s", c.path(), name, c.subNames(), clidoc.DidYouMean(name, "", strings.Split(c.subNames(), ", ")))
}

// alias declares old as a hidden, deprecated spelling of the flag new
// (already declared on fs): it sets the same value, help does not show
// it, and using it prints a note naming the new spelling. Old spellings
// stay one release so scripts keep working while they move.
func alias(fs *pflag.FlagSet, old, new string) {
	f := fs.Lookup(new)
	if f == nil {
		panic("pi2hop: alias of undeclared flag --" + new)
	}
	fs.Var(f.Value, old, f.Usage)
	fs.Lookup(old).NoOptDefVal = f.NoOptDefVal // a bool alias needs no value either
	if err := fs.MarkDeprecated(old, "use --"+new); err != nil {
		panic(err)
	}
}

// jsonFlag declares --json, machine output, alike on every command:
// BoolFunc, so help shows "--json" rather than "--json[=true|false]".
func jsonFlag(fs *pflag.FlagSet, p *bool, usage string) {
	fs.BoolFunc("json", usage, func(v string) (err error) {
		*p, err = strconv.ParseBool(v)
		return err
	})
}

// warnDeprecated tells the user which deprecated spellings they used
// (pflag's own note goes to the discarded flag-set output).
func warnDeprecated(fs *pflag.FlagSet, c *command, stderr io.Writer) {
	fs.Visit(func(f *pflag.Flag) {
		if f.Deprecated != "" {
			fmt.Fprintf(stderr, "pi2hop %s: --%s is deprecated and goes in the next release: %s\n", c.path(), f.Name, f.Deprecated)
		}
	})
}

// isCommand reports whether word names a program on PATH (or by path).
func isCommand(word string) bool { _, err := exec.LookPath(word); return err == nil }

func newFlagSet(c *command) *pflag.FlagSet {
	fs := pflag.NewFlagSet("pi2hop "+c.path(), pflag.ContinueOnError)
	fs.SortFlags = false
	fs.SetOutput(io.Discard) // Run reports errors itself
	fs.SetInterspersed(true)
	return fs
}

func printUsage(w io.Writer) {
	fmt.Fprintln(w, "pi2hop: a software L4S bottleneck (DualPI2, RFC 9332) for Linux")
	fmt.Fprintln(w, "\nUsage: pi2hop COMMAND [flags]\n\nCommands:")
	for _, c := range commands {
		fmt.Fprintf(w, "  %-10s %s\n", c.name, c.short)
	}
	fmt.Fprintln(w, "\nRun 'pi2hop help COMMAND' for a command's flags.")
}

// printCommandUsage is the one help format, for commands, groups and
// subcommands alike: synopsis, description, subcommands, examples, flags
// under their headings.
func printCommandUsage(w io.Writer, c *command) { printCommandHelp(w, c, "") }

// printCommandHelp is printCommandUsage with the queue flags narrowed to
// queue kind kind ("" for all).
func printCommandHelp(w io.Writer, c *command, kind string) {
	prefix := ""
	if c.parent != nil {
		prefix = c.parent.path() + " "
	}
	fmt.Fprintf(w, "Usage: pi2hop %s%s\n\n%s\n", prefix, c.usage, c.short)
	if c.long != "" {
		fmt.Fprintf(w, "\n%s\n", c.long)
	}
	if len(c.subs) > 0 {
		fmt.Fprintln(w, "\nSubcommands:")
		for _, s := range c.subs {
			fmt.Fprintf(w, "  %-12s %s\n", s.name, s.short)
		}
		fmt.Fprintf(w, "\nRun 'pi2hop help %s SUBCOMMAND' for a subcommand's flags.\n", c.path())
	}
	if len(c.examples) > 0 {
		fmt.Fprintln(w, "\nExamples:")
		for _, e := range c.examples {
			fmt.Fprintf(w, "  %s\n      %s\n", e.line, e.what)
		}
	}
	fs, _ := declare(c)
	if kind != "" {
		focusQueue(fs, kind)
	}
	title := func(g string) string {
		if g == "queue" && fs.Lookup("aqm") != nil && kind == "" {
			return fmt.Sprintf("Queue flags (each kind takes its own; 'pi2hop help %s --aqm KIND' shows one kind's with its defaults)", c.path())
		}
		if g == "queue" && kind != "" && c == setCmd {
			return "Queue flags of " + kind // set changes from what runs: no defaults
		}
		if g == "queue" && kind != "" {
			return "Queue flags of " + kind + ", with its defaults"
		}
		return groupTitle(g)
	}
	if u := clidoc.Usages(fs, flagGroups, title); u != "" {
		fmt.Fprintf(w, "\n%s", u)
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
	var pe *platformError
	if errors.As(err, &pe) {
		fmt.Fprintln(stderr, pe.msg)
		return 2
	}
	fmt.Fprintf(stderr, "pi2hop: %v\n", err)
	var ue *usageError
	if errors.As(err, &ue) {
		fmt.Fprintf(stderr, "Run '%s' for usage.\n", strings.TrimSpace("pi2hop help "+ue.cmd))
		return 2
	}
	return 1
}
