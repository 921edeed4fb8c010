package main

import (
	"context"
	"io"
	"strings"

	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/internal/clidoc"
	"github.com/pi2hop/pi2hop/internal/flagvalue"
	"github.com/spf13/pflag"
)

var helpCmd = &command{
	name:  "help",
	short: "show the commands, or a command's synopsis, description and flags",
	usage: "help [COMMAND [SUBCOMMAND]] [--aqm KIND]  |  help --markdown  |  help --man",
	examples: []example{
		{"pi2hop help shell", "shell's synopsis, examples and flags"},
		{"pi2hop help shell --aqm codel", "the same with only CoDel's queue knobs, each with CoDel's default"},
		{"pi2hop help --markdown > docs/cli.md", "every command's help as one page"},
	},
	flags: func(fs *pflag.FlagSet) func(context.Context, *cmdEnv, []string) error {
		var markdown, man bool
		kind := flagvalue.Choice{Choices: aqm.Kinds}
		fs.BoolVar(&markdown, "markdown", false, "print every command's help as one Markdown page (docs/cli.md is this)")
		fs.BoolVar(&man, "man", false, "print every command's help as a roff man page, pi2hop(1)")
		fs.Var(&kind, "aqm", "list only the queue knobs of this `KIND`, each with its default for that kind")
		return func(_ context.Context, env *cmdEnv, args []string) error {
			switch {
			case kind.Val != "" && (markdown || man || len(args) == 0):
				return usagef("help: --aqm narrows one command's help: name the command (help shell --aqm codel)")
			case markdown && man:
				return usagef("help: --markdown and --man: give one")
			case (markdown || man) && len(args) > 0:
				return usagef("help: --markdown and --man cover every command: name none")
			case markdown:
				return clidoc.Markdown(env.stdout, program())
			case man:
				return clidoc.Man(env.stdout, program())
			case len(args) == 0:
				printUsage(env.stdout)
				return nil
			}
			c, rest, err := lookup(args)
			if err != nil {
				return err
			}
			if len(rest) > 0 {
				return unknownSub(c, rest[0])
			}
			printCommandHelp(env.stdout, c, kind.Val)
			return nil
		}
	},
}

var completionCmd = &command{
	name:  "completion",
	short: "print a shell completion script: commands, subcommands, flags and their choices",
	usage: "completion bash|zsh|fish",
	examples: []example{
		{"source <(pi2hop completion bash)", "complete pi2hop in this bash"},
		{"pi2hop completion fish | source", "the same in fish"},
	},
	long: "bash: source <(pi2hop completion bash). zsh: source <(pi2hop completion zsh), or save it as _pi2hop in a directory of $fpath. fish: pi2hop completion fish | source.",
	subs: []*command{
		completionSub("bash", clidoc.Bash),
		completionSub("zsh", clidoc.Zsh),
		completionSub("fish", clidoc.Fish),
	},
}

func completionSub(shell string, script func(io.Writer, *clidoc.Program) error) *command {
	load := map[string]string{"bash": "source <(pi2hop completion bash)", "zsh": "source <(pi2hop completion zsh)", "fish": "pi2hop completion fish | source"}[shell]
	return &command{name: shell, usage: shell, short: "print the " + shell + " completion script",
		examples: []example{
			{load, "complete pi2hop in this " + shell},
			{"pi2hop completion " + shell + " > pi2hop." + shell, "save the script to install it"},
		},
		flags: func(*pflag.FlagSet) func(context.Context, *cmdEnv, []string) error {
			return func(_ context.Context, env *cmdEnv, args []string) error {
				if len(args) > 0 {
					return usagef("completion %s: unexpected argument %q", shell, args[0])
				}
				return script(env.stdout, program())
			}
		}}
}

// program describes the command list for clidoc: the help each command
// prints and the flags it shows, hidden old spellings left out.
func program() *clidoc.Program {
	var usage strings.Builder
	printUsage(&usage)
	short, _, _ := strings.Cut(usage.String(), "\n")
	p := &clidoc.Program{Name: "pi2hop", Short: strings.TrimPrefix(short, "pi2hop: "), Help: usage.String()}
	var conv func(c *command) *clidoc.Command
	conv = func(c *command) *clidoc.Command {
		var help strings.Builder
		printCommandUsage(&help, c)
		d := &clidoc.Command{Name: c.name, Path: c.path(), Short: c.short, Help: help.String(), ArgsAreCommands: c.name == "help" && c.parent == nil, ArgFiles: c.argFiles}
		if c.argWords != nil {
			d.ArgWords = c.argWords()
		}
		fs := newFlagSet(c)
		if c.flags != nil {
			c.flags(fs)
		}
		d.Flags = clidoc.FlagsOf(fs)
		for _, s := range c.subs {
			d.Subs = append(d.Subs, conv(s))
		}
		return d
	}
	for _, c := range commands {
		p.Commands = append(p.Commands, conv(c))
	}
	return p
}
