package main

import (
	"context"

	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/internal/cli"
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
				return clidoc.Markdown(env.stdout, app.Doc())
			case man:
				return clidoc.Man(env.stdout, app.Doc())
			case len(args) == 0:
				app.PrintUsage(env.stdout)
				return nil
			}
			c, rest, err := app.Lookup(args)
			if err != nil {
				return err
			}
			if len(rest) > 0 {
				return cli.UnknownSub(c, rest[0])
			}
			app.PrintHelp(env.stdout, c, kind.Val)
			return nil
		}
	},
}
