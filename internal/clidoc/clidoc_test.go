package clidoc

import (
	"bytes"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

type choice struct{ v string }

func (c *choice) Set(s string) error { c.v = s; return nil }
func (c *choice) String() string     { return c.v }
func (c *choice) Type() string       { return "a|b" }
func (c *choice) Words() []string    { return []string{"a", "b"} }

// testProgram is a tool with a leaf, a group and a help command.
func testProgram() *Program {
	fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
	fs.SortFlags = false
	fs.String("out", "", "write to `FILE`")
	fs.BoolP("verbose", "v", false, "say more")
	fs.Var(&choice{}, "mode", "the mode")
	fs.Int("old", 0, "an old spelling")
	_ = fs.MarkDeprecated("old", "use --out")
	get := &Command{Name: "get", Path: "grp get", Short: "get a thing", Help: "Usage: t grp get\n\nget a thing\n", Flags: FlagsOf(fs)}
	return &Program{Name: "t", Short: "a test tool", Commands: []*Command{
		{Name: "grp", Path: "grp", Short: "a group: of things", Help: "Usage: t grp SUB\n\na group\n\nSubcommands:\n  get\n", Subs: []*Command{get}},
		{Name: "help", Path: "help", Short: "help", Help: "Usage: t help\n", ArgsAreCommands: true},
		{Name: "cat", Path: "cat", Short: "print files", Help: "Usage: t cat FILE...\n", ArgFiles: true},
	}}
}

func TestFlagsOf(t *testing.T) {
	got := testProgram().Commands[0].Subs[0].Flags
	if len(got) != 3 {
		t.Fatalf("flags %+v: want out, verbose, mode (old is deprecated)", got)
	}
	if got[0].Arg != "FILE" || got[0].Usage != "write to FILE" {
		t.Errorf("--out: %+v", got[0])
	}
	if got[1].Arg != "" || got[1].Shorthand != "v" {
		t.Errorf("--verbose: %+v, want a switch with -v", got[1])
	}
	if strings.Join(got[2].Choices, ",") != "a,b" {
		t.Errorf("--mode choices %v", got[2].Choices)
	}
}

func TestRoff(t *testing.T) {
	tests := map[string]string{
		`--rate`:           `\-\-rate`,
		`a\b`:              `a\eb`,
		".start\n'quote":   "\\&.start\n\\&'quote",
		`say "x"`:          `say \(dqx\(dq`,
		"50–100 µs":        `50\[u2013]100 \[u00B5]s`,
		"mid.line it's ok": "mid.line it's ok",
	}
	for in, want := range tests {
		if got := roff(in); got != want {
			t.Errorf("roff(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestAnchor(t *testing.T) {
	if got := Anchor("pi2hop flow prague-send"); got != "pi2hop-flow-prague-send" {
		t.Errorf("anchor = %q", got)
	}
}

func TestBrief(t *testing.T) {
	tests := []struct{ in, want string }{
		{"receiver ADDR:PORT (host names resolve)", "receiver ADDR:PORT"},
		{"mode: l4s or classic; must match", "mode: l4s or classic"},
		{strings.Repeat("word ", 30), strings.TrimSpace(strings.Repeat("word ", 12)) + "…"},
	}
	for _, tt := range tests {
		if got := brief(tt.in, 60); got != tt.want {
			t.Errorf("brief(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestRenderers(t *testing.T) {
	p := testProgram()
	for name, render := range map[string]func(*bytes.Buffer) error{
		"markdown": func(b *bytes.Buffer) error { return Markdown(b, p) },
		"man":      func(b *bytes.Buffer) error { return Man(b, p) },
		"bash":     func(b *bytes.Buffer) error { return Bash(b, p) },
		"zsh":      func(b *bytes.Buffer) error { return Zsh(b, p) },
		"fish":     func(b *bytes.Buffer) error { return Fish(b, p) },
	} {
		var b bytes.Buffer
		if err := render(&b); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out := b.String()
		wants := []string{"grp", "get", "cat", "out", "verbose", "mode"}
		if name == "markdown" {
			wants = wants[:3] // the page is the help text, which names no flag here
		}
		for _, want := range wants {
			if !strings.Contains(out, want) {
				t.Errorf("%s output lacks %q", name, want)
			}
		}
		if strings.Contains(out, "old") {
			t.Errorf("%s output shows the deprecated --old", name)
		}
	}
	var md bytes.Buffer
	_ = Markdown(&md, p)
	if !strings.Contains(md.String(), "\n### t grp get\n") || !strings.Contains(md.String(), "[`t grp`](#t-grp)") {
		t.Errorf("markdown headings or links:\n%s", md.String())
	}
}
