package main

import (
	"bytes"
	"context"
	"errors"
	"runtime"
	"runtime/debug"
	"sort"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

func commandNames() []string {
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func runOut(args ...string) (stdout, stderr string, err error) {
	var o, e bytes.Buffer
	err = Run(context.Background(), args, strings.NewReader(""), &o, &e)
	return o.String(), e.String(), err
}

// TestCommandHelp walks every registered command: `help CMD` and
// `CMD --help` print the synopsis and every visible flag with a usage
// text, and the command is listed by `pi2hop help`.
func TestCommandHelp(t *testing.T) {
	for _, want := range []string{"replay", "version"} {
		if commands[want] == nil {
			t.Errorf("command %q not registered", want)
		}
	}
	list, _, err := runOut("help")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range commandNames() {
		c := commands[name]
		if c.short == "" || !strings.HasPrefix(c.usage, name) {
			t.Errorf("%s: short %q, usage %q: want a description and a synopsis starting with the name", name, c.short, c.usage)
		}
		if !strings.Contains(list, "  "+name+" ") {
			t.Errorf("pi2hop help does not list %s", name)
		}
		help, _, err := runOut("help", name)
		if err != nil {
			t.Errorf("help %s: %v", name, err)
			continue
		}
		if !strings.HasPrefix(help, "Usage: pi2hop "+c.usage+"\n") {
			t.Errorf("help %s starts %q", name, firstLine(help))
		}
		fs := newFlagSet(c)
		c.flags(fs)
		fs.VisitAll(func(f *pflag.Flag) {
			if f.Hidden || f.Deprecated != "" {
				return
			}
			if strings.TrimSpace(f.Usage) == "" {
				t.Errorf("%s --%s has no usage text", name, f.Name)
			}
			if !mentionsFlag(help, f.Name) {
				t.Errorf("help %s does not mention --%s", name, f.Name)
			}
		})
		dashHelp, _, err := runOut(name, "--help")
		if err != nil || dashHelp != help {
			t.Errorf("%s --help differs from help %s (err %v)", name, name, err)
		}
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
	}
	for _, name := range commandNames() {
		tests = append(tests, []string{name, "--no-such-flag"})
	}
	for _, args := range tests {
		_, _, err := runOut(args...)
		var ue *usageError
		if !errors.As(err, &ue) {
			t.Errorf("%q: error %v, want a usage error", args, err)
			continue
		}
		switch {
		case len(args) == 0 && !strings.Contains(err.Error(), "no command"),
			len(args) > 0 && args[len(args)-1] == "frobnicate" && !strings.Contains(err.Error(), `unknown command "frobnicate"`),
			len(args) == 2 && args[1] == "--no-such-flag" && !strings.Contains(err.Error(), "unknown flag: --no-such-flag"):
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
		{&exitError{code: 7}, 7},
	}
	for _, tt := range tests {
		if got := exitCode(tt.err, &stderr); got != tt.want {
			t.Errorf("exitCode(%v) = %d, want %d", tt.err, got, tt.want)
		}
	}
}

// TestFlagErrorFormat: pflag's wording becomes --flag "value": why, and a
// cause that already quotes the value is not quoted twice.
func TestFlagErrorFormat(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--n", "x"}, `--n "x": `},
		{[]string{"--r", "10mb"}, `--r "10mb": unknown unit "mb"`},
		{[]string{"--other"}, "unknown flag: --other"},
	}
	for _, tt := range tests {
		fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
		fs.SetOutput(new(bytes.Buffer))
		fs.Int("n", 0, "")
		fs.Var(&rateValue{}, "r", "")
		err := flagError(fs.Parse(tt.args))
		if err == nil || !strings.HasPrefix(err.Error(), tt.want) || strings.Count(err.Error(), `"10mb"`) > 1 {
			t.Errorf("%v: %v, want prefix %q", tt.args, err, tt.want)
		}
	}
}

func TestVersion(t *testing.T) {
	out, _, err := runOut("version")
	if err != nil || !strings.HasPrefix(out, "pi2hop ") || !strings.Contains(out, "go "+runtime.Version()) {
		t.Errorf("version: %q, %v", out, err)
	}
	info := &debug.BuildInfo{Main: debug.Module{Path: "github.com/pi2hop/pi2hop", Version: "v1.2.3"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc123"}, {Key: "vcs.modified", Value: "true"}}}
	got := versionText(info)
	for _, want := range []string{"pi2hop v1.2.3\n", "module github.com/pi2hop/pi2hop\n", "revision abc123 (modified)\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("versionText = %q, want %q in it", got, want)
		}
	}
	if _, _, err := runOut("version", "extra"); err == nil {
		t.Error("version extra: no error")
	}
}
