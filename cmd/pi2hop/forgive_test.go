package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/pi2hop/pi2hop/instance"
)

// A value given to --web with a space is caught before anything runs, with
// the spelling that works; exit status 2.
func TestWebValueWithASpace(t *testing.T) {
	_, _, err := runOut("shell", "--web", "127.0.0.1:8080", "--", "true")
	var stderr bytes.Buffer
	if code := exitCode(err, &stderr); code != 2 || !strings.Contains(stderr.String(), "did you mean --web=127.0.0.1:8080?") {
		t.Errorf("exit %d, stderr %q: want 2 and did you mean --web=127.0.0.1:8080?", code, stderr.String())
	}
}

// A mistyped command or flag gets the one it most likely meant, and the
// whole help is not printed.
func TestDidYouMean(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"shel"}, `unknown command "shel"; did you mean shell?`},
		{[]string{"shell", "--rat", "10mbit"}, "shell: unknown flag: --rat; did you mean --rate?"},
		{[]string{"stats", "--nmae", "x"}, "stats: unknown flag: --nmae; did you mean --name?"},
		{[]string{"help", "shel"}, `unknown command "shel"; did you mean shell?`},
	} {
		_, stderrText, err := runOut(tt.args...)
		var stderr bytes.Buffer
		if code := exitCode(err, &stderr); code != 2 || !strings.Contains(stderr.String(), tt.want) {
			t.Errorf("%q: exit %d, %q; want 2 and %q", tt.args, code, stderr.String(), tt.want)
		}
		if strings.Contains(stderrText, "Commands:") {
			t.Errorf("%q: the whole help printed:\n%s", tt.args, stderrText)
		}
	}
}

// A rate in tc's byte units starts with a warning line, and the command
// goes on (here to find no instance to change).
func TestByteRateWarning(t *testing.T) {
	_, stderr, err := runOut("set", "--name", "p2t-no-such-instance", "--rate", "10mbps")
	want := "pi2hop: warning: --rate 10mbps is 80 Mbit/s (tc: bytes per second); write 10mbit for 10 Mbit/s\n"
	if !strings.HasPrefix(stderr, want) {
		t.Errorf("stderr %q, want it to start with %q", stderr, want)
	}
	if err == nil || strings.Contains(err.Error(), "mbps") {
		t.Errorf("error %v: want the command's own (no such instance), not a refusal of the rate", err)
	}
}

// help shell names every variable the command's environment gets, says
// why $VAR must be quoted, and states that no {host} placeholder exists.
func TestHelpShellNamesTheEnvironment(t *testing.T) {
	out, _, err := runOut("help", "shell")
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range instance.ShellEnv {
		if !strings.Contains(out, v.Name) {
			t.Errorf("help shell does not name %s", v.Name)
		}
	}
	for _, want := range []string{"sh -c 'ping -c 5 -Q 1 $PI2HOP_HOST'", "expands $PI2HOP_HOST before pi2hop runs", "no placeholders such as {host}"} {
		if !strings.Contains(out, want) {
			t.Errorf("help shell does not say %q", want)
		}
	}
}
