package cli

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/pi2hop/pi2hop/internal/clidoc"
	"github.com/spf13/pflag"
)

// PrintUsage prints the command list.
func (p *Program) PrintUsage(w io.Writer) {
	fmt.Fprintf(w, "%s: %s\n", p.Name, p.Short)
	fmt.Fprintf(w, "\nUsage: %s COMMAND [flags]\n\nCommands:\n", p.Name)
	for _, c := range p.Commands {
		fmt.Fprintf(w, "  %-10s %s\n", c.Name, c.Short)
	}
	fmt.Fprintf(w, "\nRun '%s help COMMAND' for a command's flags.\n", p.Name)
}

// PrintHelp is the one help format, for commands, groups and subcommands
// alike: synopsis, description, subcommands, examples, flags under their
// headings; kind narrows the flags to one kind (Program.Narrow), "" for
// all.
func (p *Program) PrintHelp(w io.Writer, c *Command, kind string) {
	prefix := ""
	if c.parent != nil {
		prefix = c.parent.Path() + " "
	}
	fmt.Fprintf(w, "Usage: %s %s%s\n\n%s\n", p.Name, prefix, c.Usage, c.Short)
	if c.Long != "" {
		fmt.Fprintf(w, "\n%s\n", c.Long)
	}
	if len(c.Subs) > 0 {
		fmt.Fprintln(w, "\nSubcommands:")
		for _, s := range c.Subs {
			fmt.Fprintf(w, "  %-12s %s\n", s.Name, s.Short)
		}
		fmt.Fprintf(w, "\nRun '%s help %s SUBCOMMAND' for a subcommand's flags.\n", p.Name, c.Path())
	}
	if len(c.Examples) > 0 {
		fmt.Fprintln(w, "\nExamples:")
		for _, e := range c.Examples {
			fmt.Fprintf(w, "  %s\n      %s\n", e.Line, e.What)
		}
	}
	fs, _ := p.Declare(c)
	if kind != "" && p.Narrow != nil {
		p.Narrow(fs, kind)
	}
	title := func(g string) string {
		if p.Title != nil {
			if t := p.Title(c, fs, g, kind); t != "" {
				return t
			}
		}
		if g == "" {
			return "Flags"
		}
		return strings.ToUpper(g[:1]) + g[1:] + " flags"
	}
	if u := clidoc.Usages(fs, p.FlagGroups, title); u != "" {
		fmt.Fprintf(w, "\n%s", u)
	}
}

// Doc describes the command list for clidoc: the help each command
// prints and the flags it shows, hidden old spellings left out.
func (p *Program) Doc() *clidoc.Program {
	var usage strings.Builder
	p.PrintUsage(&usage)
	d := &clidoc.Program{Name: p.Name, Short: p.Short, Help: usage.String()}
	var conv func(c *Command) *clidoc.Command
	conv = func(c *Command) *clidoc.Command {
		var help strings.Builder
		p.PrintHelp(&help, c, "")
		dc := &clidoc.Command{Name: c.Name, Path: c.Path(), Short: c.Short, Help: help.String(), ArgsAreCommands: c.Name == "help" && c.parent == nil, ArgFiles: c.ArgFiles}
		if c.ArgWords != nil {
			dc.ArgWords = c.ArgWords()
		}
		fs := p.NewFlagSet(c)
		if c.Flags != nil {
			c.Flags(fs)
		}
		dc.Flags = clidoc.FlagsOf(fs)
		for _, s := range c.Subs {
			dc.Subs = append(dc.Subs, conv(s))
		}
		return dc
	}
	for _, c := range p.Commands {
		d.Commands = append(d.Commands, conv(c))
	}
	return d
}

// CompletionCommand is the command that prints p's completion scripts,
// one subcommand per shell.
func (p *Program) CompletionCommand() *Command {
	n := p.Name
	return &Command{
		Name:  "completion",
		Short: "print a shell completion script: commands, subcommands, flags and their choices",
		Usage: "completion bash|zsh|fish",
		Examples: []Example{
			{"source <(" + n + " completion bash)", "complete " + n + " in this bash"},
			{n + " completion fish | source", "the same in fish"},
		},
		Long: "bash: source <(" + n + " completion bash). zsh: source <(" + n + " completion zsh), or save it as _" + n + " in a directory of $fpath. fish: " + n + " completion fish | source.",
		Subs: []*Command{p.completionSub("bash", clidoc.Bash), p.completionSub("zsh", clidoc.Zsh), p.completionSub("fish", clidoc.Fish)},
	}
}

func (p *Program) completionSub(shell string, script func(io.Writer, *clidoc.Program) error) *Command {
	n := p.Name
	load := map[string]string{"bash": "source <(" + n + " completion bash)", "zsh": "source <(" + n + " completion zsh)", "fish": n + " completion fish | source"}[shell]
	return &Command{Name: shell, Usage: shell, Short: "print the " + shell + " completion script",
		Examples: []Example{
			{load, "complete " + n + " in this " + shell},
			{n + " completion " + shell + " > " + n + "." + shell, "save the script to install it"},
		},
		Flags: func(*pflag.FlagSet) RunFunc {
			return func(_ context.Context, env *Env, args []string) error {
				if len(args) > 0 {
					return Usagef("completion %s: unexpected argument %q", shell, args[0])
				}
				return script(env.Stdout, p.Doc())
			}
		}}
}
