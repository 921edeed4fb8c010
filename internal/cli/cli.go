// Package cli runs a program's command tree: it finds the command the
// arguments name, parses its flags, turns every mistake into a usage
// error that names the command's help, and prints the help itself. The
// program declares its commands once (Program); dispatch, help, the
// generated docs and the completion scripts (package clidoc) all read
// that one list.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"runtime"
	"strings"

	"github.com/pi2hop/pi2hop/internal/clidoc"
	"github.com/pi2hop/pi2hop/internal/flagvalue"
	"github.com/spf13/pflag"
)

// Program is the whole command line.
type Program struct {
	Name     string // as typed: "pi2hop"
	Short    string // one line: what the program is
	Commands []*Command
	// FlagGroups are the headings of a command's flags, in help's order;
	// its own flags (no group) come first. GroupOf places the flags
	// shared across commands that declare no group themselves.
	FlagGroups []string
	GroupOf    map[string]string
	// Title names a group's heading in c's help when the program words
	// it itself ("" for the usual "Link flags"); kind is the --aqm kind
	// help was narrowed to, "" for none.
	Title func(c *Command, fs *pflag.FlagSet, group, kind string) string
	// Narrow leaves in fs the flags of one kind (help's --aqm).
	Narrow func(fs *pflag.FlagSet, kind string)
	// GOOS is the system Run dispatches for; a test sets another.
	GOOS string
}

// Command is one command or subcommand; a command with Subs is a group
// whose subcommands are dispatched, parsed and helped by the same code.
type Command struct {
	Name  string // as typed: "replay", "prague-send"
	Short string // one line for the command list
	Usage string // synopsis after the parent's path: "replay [flags] --trace FILE"
	Long  string // optional paragraph printed after Short in the command's help
	// Examples are command lines with what each does, as help lists them.
	Examples []Example
	// Flags declares the command's flags on fs and returns the function
	// that runs the command once they are parsed; args are the positional
	// arguments (after "--" too). nil for a group.
	Flags func(fs *pflag.FlagSet) RunFunc
	Subs  []*Command // in the order help lists them
	// ArgFiles: the positional arguments are files or a command line;
	// ArgWords lists the words one may be. For completion.
	ArgFiles bool
	ArgWords func() []string
	// Linux names what the command needs that only Linux has ("TUN
	// devices, netlink, nftables"); "" where it runs anywhere. Elsewhere
	// such a command and its subcommands exit 2 with one line saying so.
	Linux  string
	parent *Command
}

// RunFunc runs a command with its positional arguments.
type RunFunc func(ctx context.Context, env *Env, args []string) error

// Example is one command line of a command's help and what it does.
type Example struct{ Line, What string }

// Env is what a command may touch of the outside world, so tests can run
// commands in-process.
type Env struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
}

// Init links each command to its parent; call it once the list is whole.
func (p *Program) Init() {
	if p.GOOS == "" {
		p.GOOS = runtime.GOOS
	}
	var set func(c *Command)
	set = func(c *Command) {
		for _, s := range c.Subs {
			s.parent = c
			set(s)
		}
	}
	for _, c := range p.Commands {
		set(c)
	}
}

// Path is the command as typed after the program's name: "flow prague-send".
func (c *Command) Path() string {
	if c.parent == nil {
		return c.Name
	}
	return c.parent.Path() + " " + c.Name
}

// Parent is the group c belongs to, nil for a top-level command.
func (c *Command) Parent() *Command { return c.parent }

func (c *Command) sub(name string) *Command {
	for _, s := range c.Subs {
		if s.Name == name {
			return s
		}
	}
	return nil
}

func (c *Command) subNames() string {
	names := make([]string, len(c.Subs))
	for i, s := range c.Subs {
		names[i] = s.Name
	}
	return strings.Join(names, ", ")
}

// Command returns the top-level command named name, or nil.
func (p *Program) Command(name string) *Command {
	for _, c := range p.Commands {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// Lookup walks args down the command tree: the command args[0] names,
// then each subcommand the next argument names. It returns the deepest
// command found and the arguments after it.
func (p *Program) Lookup(args []string) (*Command, []string, error) {
	c := p.Command(args[0])
	if c == nil {
		names := make([]string, len(p.Commands))
		for i, c := range p.Commands {
			names[i] = c.Name
		}
		return nil, nil, Usagef("unknown command %q%s", args[0], clidoc.DidYouMean(args[0], "", names))
	}
	rest := args[1:]
	for len(c.Subs) > 0 && len(rest) > 0 {
		s := c.sub(rest[0])
		if s == nil {
			break
		}
		c, rest = s, rest[1:]
	}
	return c, rest, nil
}

// UnknownSub is the usage error of a word after c that names none of its
// subcommands (or of any word, when c has none).
func UnknownSub(c *Command, name string) error {
	if len(c.Subs) == 0 {
		return Usagef("%s: unexpected argument %q", c.Path(), name)
	}
	return Usagef("%s: unknown subcommand %q (want %s)%s", c.Path(), name, c.subNames(), clidoc.DidYouMean(name, "", strings.Split(c.subNames(), ", ")))
}

// Run runs the program with args (without the program's name).
func (p *Program) Run(ctx context.Context, args []string, env *Env) error {
	if len(args) == 0 {
		p.PrintUsage(env.Stderr)
		return Usagef("no command given")
	}
	switch args[0] {
	case "-h", "--help":
		args = append([]string{"help"}, args[1:]...)
	case "-V", "--version":
		args = append([]string{"version"}, args[1:]...)
	}
	c, rest, err := p.Lookup(args)
	if err != nil {
		return err
	}
	fs, run := p.Declare(c)
	if len(c.Subs) > 0 {
		fs.SetInterspersed(false) // a word after the group's flags is a subcommand
	}
	if err := fs.Parse(rest); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			p.PrintHelp(env.Stdout, c, "")
			return nil
		}
		return inCommand(Usagef("%s: %v", c.Path(), clidoc.FlagError(fs, err)), c)
	}
	if err := flagvalue.BareValue(fs, rest, isCommand); err != nil {
		return inCommand(Usagef("%s: %v", c.Path(), err), c)
	}
	for _, w := range flagvalue.ByteRateWarnings(fs, rest) {
		fmt.Fprintf(env.Stderr, "%s: warning: %s\n", p.Name, w)
	}
	p.warnDeprecated(fs, c, env.Stderr)
	if len(c.Subs) > 0 {
		if fs.NArg() == 0 {
			return inCommand(Usagef("%s: no subcommand given (want %s)", c.Path(), c.subNames()), c)
		}
		return inCommand(UnknownSub(c, fs.Arg(0)), c)
	}
	if err := p.NeedsLinux(c); err != nil {
		return err
	}
	return inCommand(run(ctx, env, fs.Args()), c)
}

// NeedsLinux returns the error command c gives on p.GOOS, or nil when it
// runs there. A subcommand needs what its top-level command needs.
func (p *Program) NeedsLinux(c *Command) error {
	top := c
	for top.parent != nil {
		top = top.parent
	}
	if top.Linux == "" || p.GOOS == "linux" {
		return nil
	}
	return &PlatformError{fmt.Sprintf("%s %s: needs Linux (%s)", p.Name, top.Name, top.Linux)}
}

// isCommand reports whether word names a program on PATH (or by path).
func isCommand(word string) bool { _, err := exec.LookPath(word); return err == nil }

// Declare makes c's flag set: its flags, each placed under its heading,
// and the function that runs c (nil for a group).
func (p *Program) Declare(c *Command) (*pflag.FlagSet, RunFunc) {
	fs := p.NewFlagSet(c)
	var run RunFunc
	if c.Flags != nil {
		run = c.Flags(fs)
	}
	fs.VisitAll(func(f *pflag.Flag) {
		if g, ok := p.GroupOf[f.Name]; ok && f.Annotations[clidoc.GroupAnnotation] == nil {
			clidoc.Annotate(fs, f.Name, clidoc.GroupAnnotation, g)
		}
	})
	return fs, run
}

// NewFlagSet is an empty flag set for c, as Run parses it.
func (p *Program) NewFlagSet(c *Command) *pflag.FlagSet {
	fs := pflag.NewFlagSet(p.Name+" "+c.Path(), pflag.ContinueOnError)
	fs.SortFlags = false
	fs.SetOutput(io.Discard) // Run reports errors itself
	fs.SetInterspersed(true)
	return fs
}

// warnDeprecated tells the user which deprecated spellings they used
// (pflag's own note goes to the discarded flag-set output).
func (p *Program) warnDeprecated(fs *pflag.FlagSet, c *Command, stderr io.Writer) {
	fs.Visit(func(f *pflag.Flag) {
		if f.Deprecated != "" {
			fmt.Fprintf(stderr, "%s %s: --%s is deprecated and goes in the next release: %s\n", p.Name, c.Path(), f.Name, f.Deprecated)
		}
	})
}
