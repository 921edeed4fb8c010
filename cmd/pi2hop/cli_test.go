package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/pi2hop/pi2hop/internal/buildinfo"
	"github.com/pi2hop/pi2hop/internal/cli"
	"github.com/spf13/pflag"
)

func commandNames() []string {
	names := make([]string, len(app.Commands))
	for i, c := range app.Commands {
		names[i] = c.Name
	}
	return names
}

func runOut(args ...string) (stdout, stderr string, err error) {
	var o, e bytes.Buffer
	err = Run(context.Background(), args, strings.NewReader(""), &o, &e)
	return o.String(), e.String(), err
}

// walkCommands calls f for every command and subcommand, each parent
// before its subcommands.
func walkCommands(f func(c *cli.Command)) {
	var walk func(c *cli.Command)
	walk = func(c *cli.Command) {
		f(c)
		for _, s := range c.Subs {
			walk(s)
		}
	}
	for _, c := range app.Commands {
		walk(c)
	}
}

// flagsOf returns c's flag set with its flags declared.
func flagsOf(c *cli.Command) *pflag.FlagSet {
	fs := newFlagSet(c)
	if c.Flags != nil {
		c.Flags(fs)
	}
	return fs
}

// TestCommandHelp walks every command and subcommand: `help PATH` and
// `PATH --help` print the same text in one format (synopsis, description,
// subcommands, flags); every flag is either in that help with a usage
// text or a deprecated alias; every --flag the synopsis or description
// names is one the help lists; `pi2hop help` and a group's help list
// what is under them.
func TestCommandHelp(t *testing.T) {
	for _, want := range []string{"replay", "version", "flow"} {
		if topCommand(want) == nil {
			t.Errorf("command %q is not in the command list", want)
		}
	}
	seen := map[string]bool{}
	walkCommands(func(c *cli.Command) {
		if seen[c.Path()] {
			t.Errorf("%s is in the command list twice", c.Path())
		}
		seen[c.Path()] = true
	})
	list, _, err := runOut("help")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range commandNames() {
		if !strings.Contains(list, "  "+name+" ") {
			t.Errorf("pi2hop help does not list %s", name)
		}
	}
	walkCommands(func(c *cli.Command) {
		path := c.Path()
		if c.Short == "" || !strings.HasPrefix(c.Usage, c.Name) {
			t.Errorf("%s: short %q, usage %q: want a description and a synopsis starting with the name", path, c.Short, c.Usage)
		}
		help, _, err := runOut(append([]string{"help"}, strings.Fields(path)...)...)
		if err != nil {
			t.Errorf("help %s: %v", path, err)
			return
		}
		if want := "Usage: pi2hop " + strings.TrimSuffix(path, c.Name) + c.Usage + "\n"; !strings.HasPrefix(help, want) {
			t.Errorf("help %s starts %q, want %q", path, firstLine(help), want)
		}
		for _, s := range c.Subs {
			if !strings.Contains(help, "  "+s.Name+" ") {
				t.Errorf("help %s does not list %s", path, s.Name)
			}
		}
		visible := map[string]bool{}
		flagsOf(c).VisitAll(func(f *pflag.Flag) {
			switch {
			case f.Deprecated != "":
				return // a hidden old spelling: TestOldSpellings
			case f.Hidden && f.Annotations[tcAliasAnnotation] != nil:
				// tc's keyword as an alias: the help names the keyword.
				if kw := f.Annotations[tcAliasAnnotation][0]; !strings.Contains(help, kw) {
					t.Errorf("help %s hides --%s and never names tc's %s", path, f.Name, kw)
				}
				return
			case f.Hidden && c.Path() == "set" && isFixed(f.Name):
				return // parsed only to be refused with a reason: TestHelpHonest
			case f.Hidden:
				t.Errorf("%s --%s is hidden but not a deprecated alias: show it in the help or remove it", path, f.Name)
			case strings.TrimSpace(f.Usage) == "":
				t.Errorf("%s --%s has no usage text", path, f.Name)
			case !mentionsFlag(help, f.Name):
				t.Errorf("help %s does not mention --%s", path, f.Name)
			}
			visible[f.Name] = true
		})
		// A group's synopsis may name its subcommands' flags.
		for _, s := range c.Subs {
			flagsOf(s).VisitAll(func(f *pflag.Flag) { visible[f.Name] = f.Deprecated == "" && !f.Hidden })
		}
		for _, name := range flagWords(c.Usage + " " + c.Short + " " + c.Long) {
			if !visible[name] {
				t.Errorf("%s: synopsis or description names --%s, which its help does not list", path, name)
			}
		}
		dashHelp, _, err := runOut(append(strings.Fields(path), "--help")...)
		if err != nil || dashHelp != help {
			t.Errorf("%s --help differs from help %s (err %v)", path, path, err)
		}
	})
}

// flagWords returns the NAME of every --NAME in s.
func flagWords(s string) []string {
	var out []string
	for _, w := range strings.Fields(s) {
		i := strings.Index(w, "--")
		if i < 0 {
			continue
		}
		name := strings.TrimFunc(w[i+2:], func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '-' })
		if end := strings.IndexFunc(name, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '-' }); end >= 0 {
			name = name[:end]
		}
		if name != "" {
			out = append(out, name)
		}
	}
	return out
}

// spellings: one visible name per idea across every command. The others
// may only be deprecated aliases. (analyze's --bin stays: it is the width
// of a time bin of an offline series, not how often something repeats;
// lab's --repeat N is a count of repetitions, not an interval.)
var spellings = []struct {
	idea, name string
	others     []string
}{
	{"a repeat interval", "every", []string{"watch", "interval", "period", "refresh", "tick", "poll"}},
	{"machine output", "json", []string{"format", "output", "output-format", "jsonl", "json-lines", "machine"}},
}

// TestOneSpellingPerIdea fails when any command or subcommand shows a
// second spelling of an idea in its help.
func TestOneSpellingPerIdea(t *testing.T) {
	walkCommands(func(c *cli.Command) {
		help, _, err := runOut(append([]string{"help"}, strings.Fields(c.Path())...)...)
		if err != nil {
			t.Fatalf("help %s: %v", c.Path(), err)
		}
		flagsOf(c).VisitAll(func(f *pflag.Flag) {
			for _, sp := range spellings {
				if slices.Contains(sp.others, f.Name) && f.Deprecated == "" {
					t.Errorf("%s --%s: %s is spelled --%s", c.Path(), f.Name, sp.idea, sp.name)
				}
				if slices.Contains(sp.others, f.Name) && mentionsFlag(help, f.Name) {
					t.Errorf("help %s shows the old spelling --%s", c.Path(), f.Name)
				}
			}
		})
	})
}

// TestOldSpellings: every deprecated flag is an alias that sets the very
// value of the flag it names, or says it is ignored; and using one parses,
// works and prints a note with the new spelling.
func TestOldSpellings(t *testing.T) {
	seen := 0
	walkCommands(func(c *cli.Command) {
		fs := flagsOf(c)
		fs.VisitAll(func(f *pflag.Flag) {
			if f.Deprecated == "" {
				return
			}
			seen++
			if !f.Hidden {
				t.Errorf("%s --%s is deprecated but shown", c.Path(), f.Name)
			}
			if strings.HasPrefix(f.Deprecated, "ignored") {
				return
			}
			to, ok := strings.CutPrefix(f.Deprecated, "use --")
			nf := fs.Lookup(to)
			if !ok || nf == nil || nf.Value != f.Value {
				t.Errorf("%s --%s (%q) is not an alias of a declared flag", c.Path(), f.Name, f.Deprecated)
			}
		})
	})
	if seen == 0 {
		t.Error("no deprecated spellings found: the walk saw none of --watch, --interval")
	}
	// One end to end: the old spelling sets the new flag and warns.
	fs := flagsOf(topCommand("stats"))
	if err := fs.Parse([]string{"--watch", "2s"}); err != nil {
		t.Fatal(err)
	}
	if got := fs.Lookup("every").Value.String(); got != "2s" {
		t.Errorf("stats --watch 2s: --every = %s, want 2s", got)
	}
	var note bytes.Buffer
	_ = Run(context.Background(), []string{"stats", "--watch", "2s", "--name", "no-such-instance"}, nil, io.Discard, &note) // warns, then finds none
	if !strings.Contains(note.String(), "--watch is deprecated") || !strings.Contains(note.String(), "use --every") {
		t.Errorf("note %q: want it to name --watch and --every", note.String())
	}
}

// mentionsFlag reports whether help lists --name as a whole word
// ("--json[=true|false]" for pflag's booleans).
func mentionsFlag(help, name string) bool {
	for _, end := range []string{" ", "[", "=", "\n"} {
		if strings.Contains(help, "--"+name+end) {
			return true
		}
	}
	return false
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// TestUnknownCommandsAndFlags: mistakes are usage errors (exit 2) that name
// what was wrong.
func TestUnknownCommandsAndFlags(t *testing.T) {
	tests := [][]string{
		nil,
		{"frobnicate"},
		{"help", "frobnicate"},
		{"help", "flow", "frobnicate"},
	}
	walkCommands(func(c *cli.Command) {
		tests = append(tests, append(strings.Fields(c.Path()), "--no-such-flag"))
	})
	for _, args := range tests {
		_, _, err := runOut(args...)
		var ue *usageError
		if !errors.As(err, &ue) {
			t.Errorf("%q: error %v, want a usage error", args, err)
			continue
		}
		switch {
		case len(args) == 0 && !strings.Contains(err.Error(), "no command"),
			len(args) == 2 && args[1] == "frobnicate" && !strings.Contains(err.Error(), `unknown command "frobnicate"`),
			len(args) == 3 && args[2] == "frobnicate" && !strings.Contains(err.Error(), `flow: unknown subcommand "frobnicate"`),
			len(args) > 1 && args[len(args)-1] == "--no-such-flag" && !strings.Contains(err.Error(), "unknown flag: --no-such-flag"):
			t.Errorf("%q: error %q does not say what was wrong", args, err)
		}
		var stderr bytes.Buffer
		if code := exitCode(err, &stderr); code != 2 || !strings.Contains(stderr.String(), "pi2hop help") {
			t.Errorf("%q: exit %d, stderr %q: want 2 and a hint", args, code, stderr.String())
		}
	}
}

func TestExitCode(t *testing.T) {
	var stderr bytes.Buffer
	tests := []struct {
		err  error
		want int
	}{
		{nil, 0},
		{errors.New("boom"), 1},
		{usagef("bad"), 2},
		{&cli.ExitError{Code: 7}, 7},
	}
	for _, tt := range tests {
		if got := exitCode(tt.err, &stderr); got != tt.want {
			t.Errorf("ExitCode(%v) = %d, want %d", tt.err, got, tt.want)
		}
	}
}

func TestVersion(t *testing.T) {
	out, _, err := runOut("version")
	if err != nil || !strings.HasPrefix(out, "pi2hop ") || !strings.Contains(out, "go "+runtime.Version()) {
		t.Errorf("version: %q, %v", out, err)
	}
	info := buildinfo.From(&debug.BuildInfo{Main: debug.Module{Path: "github.com/pi2hop/pi2hop", Version: "v1.2.3"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc123"}, {Key: "vcs.modified", Value: "true"}}})
	got := info.Describe()
	for _, want := range []string{"pi2hop v1.2.3 revision abc123 (modified)\n", "commit abc123 with uncommitted changes\n", "module github.com/pi2hop/pi2hop\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("Describe = %q, want %q in it", got, want)
		}
	}
	if dash, _, err := runOut("--version"); err != nil || dash != out || !strings.Contains(out, "\ncommit ") {
		t.Errorf("--version: %q, %v; want version's %q with a commit line", dash, err, out)
	}
	if _, _, err := runOut("version", "extra"); err == nil {
		t.Error("version extra: no error")
	}
}
