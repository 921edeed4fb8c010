package cli

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// toy is a program of two commands, one a group, for the tests.
func toy(ran *[]string) *Program {
	leaf := func(name string) *Command {
		return &Command{Name: name, Short: name + " things", Usage: name + " [flags]",
			Examples: []Example{{"toy go --fast", "go fast"}},
			Flags: func(fs *pflag.FlagSet) RunFunc {
				fast := fs.Bool("fast", false, "go fast")
				fs.Duration("json-every", 0, "how often")
				return func(_ context.Context, _ *Env, args []string) error {
					*ran = append(*ran, name+" "+strings.Join(args, " "))
					if *fast && len(args) > 0 {
						return Usagef("%s: --fast takes no arguments", name)
					}
					return nil
				}
			}}
	}
	p := &Program{Name: "toy", Short: "a toy", GroupOf: map[string]string{"json-every": "output"}, FlagGroups: []string{"output"},
		Commands: []*Command{leaf("go"), {Name: "net", Short: "net things", Usage: "net SUBCOMMAND", Subs: []*Command{leaf("up"), leaf("down")}, Linux: "netlink"}}}
	p.Init()
	return p
}

func TestRun(t *testing.T) {
	tests := []struct {
		args     []string
		ran      string
		code     int
		stderr   string
		linuxOff bool
	}{
		{args: []string{"go", "a"}, ran: "go a"},
		{args: []string{"net", "up", "--", "-x"}, ran: "up -x"},
		{args: []string{"go", "--fast", "a"}, ran: "go a", code: 2, stderr: "toy: go: --fast takes no arguments\nRun 'toy help go' for usage.\n"},
		{args: []string{"og"}, code: 2, stderr: "toy: unknown command \"og\"; did you mean go?\nRun 'toy help' for usage.\n"},
		{args: []string{"net"}, code: 2, stderr: "toy: net: no subcommand given (want up, down)\nRun 'toy help net' for usage.\n"},
		{args: []string{"net", "dwon"}, code: 2, stderr: "toy: net: unknown subcommand \"dwon\" (want up, down); did you mean down?\nRun 'toy help net' for usage.\n"},
		{args: []string{"net", "up", "--bogus"}, code: 2, stderr: "Run 'toy help net up' for usage.\n"},
		{args: []string{"net", "up"}, linuxOff: true, code: 2, stderr: "toy net: needs Linux (netlink)\n"},
		{args: []string{"go"}, linuxOff: true, ran: "go "},
	}
	for _, tt := range tests {
		var ran []string
		p := toy(&ran)
		p.GOOS = "linux"
		if tt.linuxOff {
			p.GOOS = "plan9"
		}
		var stderr bytes.Buffer
		err := p.Run(context.Background(), tt.args, &Env{Stdout: &bytes.Buffer{}, Stderr: &stderr})
		if code := ExitCode(p.Name, err, &stderr); code != tt.code || !strings.HasSuffix(stderr.String(), tt.stderr) {
			t.Errorf("%q: exit %d, stderr %q; want %d, ending %q", tt.args, code, stderr.String(), tt.code, tt.stderr)
		}
		if got := strings.Join(ran, "|"); got != tt.ran {
			t.Errorf("%q ran %q, want %q", tt.args, got, tt.ran)
		}
	}
}

func TestExitCode(t *testing.T) {
	for _, tt := range []struct {
		err    error
		code   int
		stderr string
	}{
		{nil, 0, ""},
		{errors.New("boom"), 1, "toy: boom\n"},
		{&ExitError{Code: 7}, 7, ""},
		{&PlatformError{Msg: "toy x: needs Linux"}, 2, "toy x: needs Linux\n"},
		{&UsageError{Msg: "bad", Cmd: "net up"}, 2, "toy: bad\nRun 'toy help net up' for usage.\n"},
	} {
		var stderr bytes.Buffer
		if code := ExitCode("toy", tt.err, &stderr); code != tt.code || stderr.String() != tt.stderr {
			t.Errorf("%v: exit %d, %q; want %d, %q", tt.err, code, stderr.String(), tt.code, tt.stderr)
		}
	}
}

// Help lists a group's subcommands, a command's examples and its flags
// under their headings; --help prints the same.
func TestHelp(t *testing.T) {
	p := toy(new([]string))
	var b bytes.Buffer
	p.PrintHelp(&b, p.Command("net"), "")
	if want := "Usage: toy net SUBCOMMAND\n\nnet things\n\nSubcommands:\n  up           up things\n  down         down things\n\nRun 'toy help net SUBCOMMAND' for a subcommand's flags.\n"; b.String() != want {
		t.Errorf("help net:\n%s\nwant\n%s", b.String(), want)
	}
	up, _, _ := p.Lookup([]string{"net", "up"})
	b.Reset()
	p.PrintHelp(&b, up, "")
	for _, want := range []string{"Usage: toy net up [flags]\n", "Examples:\n  toy go --fast\n      go fast\n", "Flags:\n      --fast", "Output flags:\n      --json-every"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("help net up lacks %q:\n%s", want, b.String())
		}
	}
	var out bytes.Buffer
	if err := p.Run(context.Background(), []string{"net", "up", "--help"}, &Env{Stdout: &out, Stderr: &out}); err != nil || out.String() != b.String() {
		t.Errorf("net up --help: %v\n%s\nwant\n%s", err, out.String(), b.String())
	}
	if d := p.Doc(); len(d.Commands) != 2 || d.Commands[1].Subs[0].Path != "net up" || d.Commands[1].Subs[0].Help != b.String() {
		t.Errorf("Doc: %+v", d.Commands)
	}
}
