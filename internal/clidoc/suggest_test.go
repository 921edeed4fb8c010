package clidoc

import (
	"bytes"
	"strings"
	"testing"

	"github.com/pi2hop/pi2hop/internal/flagvalue"
	"github.com/spf13/pflag"
)

func TestEditDistance(t *testing.T) {
	for _, tt := range []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"shell", "shell", 0}, {"shel", "shell", 1}, {"", "abc", 3},
		{"rat", "rate", 1}, {"sehll", "shell", 1}, // a swap of neighbours is one edit
		{"kitten", "sitting", 3}, {"replay", "relay", 1}, {"stats", "set", 3},
	} {
		if got := editDistance(tt.a, tt.b); got != tt.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
		if got := editDistance(tt.b, tt.a); got != tt.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tt.b, tt.a, got, tt.want)
		}
	}
}

func TestSuggest(t *testing.T) {
	commands := []string{"run", "share", "shell", "stats", "set", "replay", "analyze", "check", "lab", "profiles", "help"}
	for _, tt := range []struct {
		word, want string
	}{
		{"shel", "shell"},
		{"sehll", "shell"},
		{"stat", "stats"},
		{"anlyze", "analyze"},
		{"prof", "profiles"}, // a prefix of one command only
		{"sh", ""},           // a prefix of two, and two edits from any
		{"frobnicate", ""},
		{"xyz", ""},
	} {
		got, ok := Suggest(tt.word, commands)
		if got != tt.want || ok != (tt.want != "") {
			t.Errorf("Suggest(%q) = %q, %v; want %q", tt.word, got, ok, tt.want)
		}
	}
}

// FlagError: pflag's wording becomes --flag "value": why, a cause that
// already quotes the value is not quoted twice, and an unknown flag gets
// the flag it most likely meant (never a hidden one).
func TestFlagError(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--n", "x"}, `--n "x": `},
		{[]string{"--r", "10mb"}, `--r "10mb": unknown unit "mb"`},
		{[]string{"--other"}, "unknown flag: --other"},
		{[]string{"--rat", "10mbit"}, "unknown flag: --rat; did you mean --rate?"},
		{[]string{"--rat=10mbit"}, "unknown flag: --rat; did you mean --rate?"},
		{[]string{"--secre"}, "unknown flag: --secre"},
	}
	for _, tt := range tests {
		fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
		fs.SetOutput(new(bytes.Buffer))
		fs.Int("n", 0, "")
		fs.Var(&flagvalue.Rate{}, "r", "")
		fs.Var(&flagvalue.Rate{}, "rate", "")
		fs.Bool("nat", false, "") // one edit from --rat too, but --rate shares its start
		fs.Bool("secret", false, "")
		fs.MarkHidden("secret")
		err := FlagError(fs, fs.Parse(tt.args))
		if err == nil || !strings.HasPrefix(err.Error(), tt.want) || strings.Count(err.Error(), `"10mb"`) > 1 {
			t.Errorf("%v: %v, want prefix %q", tt.args, err, tt.want)
		}
		if tt.want == "unknown flag: --secre" && strings.Contains(err.Error(), "did you mean") {
			t.Errorf("%v: %v suggests a hidden flag", tt.args, err)
		}
	}
}

// A bare number for a time speaks of tc only for the link's and queue's
// settings, which tc also has; a polling period gets plain advice.
func TestFlagErrorBareTime(t *testing.T) {
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	fs.SetOutput(new(bytes.Buffer))
	fs.Var(&flagvalue.Duration{}, "delay", "")
	Annotate(fs, "delay", GroupAnnotation, "link")
	fs.Var(new(flagvalue.Time), "every", "")
	for _, tt := range []struct{ args, want string }{
		{"--delay=10", `--delay "10": give a unit, e.g. 10ms, 250us or 1.5s (tc would read a bare number as microseconds)`},
		{"--every=1", `--every "1": give a unit, e.g. 1s, 500ms or 2m`},
	} {
		if err := FlagError(fs, fs.Parse([]string{tt.args})); err == nil || err.Error() != tt.want {
			t.Errorf("%s: %v, want %q", tt.args, err, tt.want)
		}
	}
}
