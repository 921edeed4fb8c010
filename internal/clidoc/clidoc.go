// Package clidoc renders a command-line program's help, as its commands
// describe themselves, into the forms that live around a Go binary: a
// Markdown page, a roff man page and shell completion scripts for bash,
// zsh and fish. The program builds one Program from the same command
// list its dispatcher and `help` read, so none of these can drift from
// the help the binary prints.
package clidoc

import (
	"strings"
	"unicode/utf8"

	"github.com/spf13/pflag"
)

// Program is the whole command line.
type Program struct {
	Name     string // as typed: "pi2hop"
	Short    string // one line: what the program is
	Help     string // what `NAME help` prints
	Commands []*Command
}

// Command is one command or subcommand.
type Command struct {
	Name  string // as typed: "prague-send"
	Path  string // after the program's name: "flow prague-send"
	Short string // one line
	Help  string // what `NAME help PATH` prints, verbatim
	// ArgsAreCommands marks a command whose arguments name other commands
	// (help): completion offers command names after it.
	ArgsAreCommands bool
	// ArgFiles marks a command whose arguments are files or a command
	// line; ArgWords lists the words an argument may be (a scenario).
	// Completion offers neither after a command with no arguments.
	ArgFiles bool
	ArgWords []string
	Flags    []Flag
	Subs     []*Command
}

// Flag is one flag of a command, as its help shows it.
type Flag struct {
	Name      string   // long name, without dashes
	Shorthand string   // one letter, or ""
	Arg       string   // the value's name in help ("ADDR:PORT"); "" for a switch
	Usage     string   // the help text, without the value's name quoting
	Choices   []string // the words the value may be, when it is one of a list
}

// FlagsOf lists the flags of fs that help shows, in its order: hidden
// and deprecated spellings are left out. A value with a Words method
// (one word out of a fixed list) gives its Choices.
func FlagsOf(fs *pflag.FlagSet) []Flag {
	var out []Flag
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Hidden || f.Deprecated != "" {
			return
		}
		cf := Flag{Name: f.Name, Shorthand: f.Shorthand, Arg: Placeholder(f), Usage: usageText(f)}
		if w, ok := f.Value.(interface{ Words() []string }); ok {
			cf.Choices = w.Words()
		}
		out = append(out, cf)
	})
	return out
}

// walk calls f for every command, each parent before its subcommands.
func (p *Program) walk(f func(c *Command)) {
	var rec func(cs []*Command)
	rec = func(cs []*Command) {
		for _, c := range cs {
			f(c)
			rec(c.Subs)
		}
	}
	rec(p.Commands)
}

// brief shortens a help text to what fits beside a name in a completion
// menu: up to the first clause break that leaves a phrase ("; ", ": ",
// " ("), at most max runes.
func brief(s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
	const minPhrase = 15
	cut := len(s)
	for _, sep := range []string{"; ", ": ", " ("} {
		if i := strings.Index(s[min(minPhrase, len(s)):], sep); i >= 0 {
			cut = min(cut, i+min(minPhrase, len(s)))
		}
	}
	s = s[:cut]
	if utf8.RuneCountInString(s) > max {
		r := []rune(s)
		s = strings.TrimSpace(string(r[:max-1])) + "…"
	}
	return s
}
