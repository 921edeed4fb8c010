package main

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/instance"
	"github.com/pi2hop/pi2hop/internal/cli"
	"github.com/pi2hop/pi2hop/internal/clidoc"
	"github.com/spf13/pflag"
)

// helpLine finds a flag's line (and its usage, which may wrap to the
// next line) in a help text.
func helpLine(help, flag string) string {
	lines := strings.Split(help, "\n")
	for i, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "--"+flag+" ") || strings.TrimSpace(l) == "--"+flag ||
			strings.Contains(l, ", --"+flag+" ") {
			if i+1 < len(lines) && strings.HasPrefix(lines[i+1], strings.Repeat(" ", 20)) {
				return l + "\n" + lines[i+1]
			}
			return l
		}
	}
	return ""
}

var defaultRE = regexp.MustCompile(`\(default ([^()]*)\)`)

// shownDefaults lists the defaults a flag's help line states.
func shownDefaults(line string) []string {
	var out []string
	for _, m := range defaultRE.FindAllStringSubmatch(line, -1) {
		out = append(out, m[1])
	}
	return out
}

// fixedExamples are values of the settings a running hop cannot change.
var fixedExamples = map[string]string{"aqm": "codel", "mtu": "9000", "seed": "7"}

// TestHelpHonest walks every command's help: no Go type name stands for a
// value; set lists only what a running hop can change, with no default;
// a queue knob shows a default only where it applies (the same under
// every kind, or the one kind `help CMD --aqm KIND` narrows to), and
// each kind's default is the kernel's.
func TestHelpHonest(t *testing.T) {
	typeWord := regexp.MustCompile(`--[a-z0-9-]+ (` + strings.Join(clidoc.GoTypeNames, "|") + `)\b`)
	walkCommands(func(c *cli.Command) {
		help, _, err := runOut(append([]string{"help"}, strings.Fields(c.Path())...)...)
		if err != nil {
			t.Fatalf("help %s: %v", c.Path(), err)
		}
		if m := typeWord.FindString(help); m != "" {
			t.Errorf("help %s shows a Go type name: %q", c.Path(), m)
		}
		flagsOf(c).VisitAll(func(f *pflag.Flag) {
			if p := clidoc.Placeholder(f); slices.Contains(clidoc.GoTypeNames, p) {
				t.Errorf("help %s: --%s shows its Go type %q", c.Path(), f.Name, p)
			}
		})
	})

	set, _, _ := runOut("help", "set")
	for _, st := range instance.Table() {
		line := helpLine(set, st.FlagName())
		if strings.Contains(line, "(default") {
			t.Errorf("help set shows a default for --%s; set changes what runs, it has none: %q", st.FlagName(), line)
		}
		listed := line != ""
		switch {
		case st.Fixed && listed:
			t.Errorf("help set lists --%s, which set refuses", st.FlagName())
		case !st.Fixed && !listed:
			t.Errorf("help set does not list --%s, which set changes live", st.FlagName())
		}
		if st.Fixed {
			_, _, err := runOut("set", "--"+st.FlagName(), fixedExamples[st.Key])
			if err == nil || !strings.Contains(err.Error(), "cannot change while the hop runs") {
				t.Errorf("set --%s: %v, want it refused as fixed", st.FlagName(), err)
			}
		}
	}

	for _, cmd := range []string{"shell", "run", "share", "replay"} {
		all, _, _ := runOut("help", cmd)
		for _, st := range instance.Table() {
			if !st.QueueKnob() {
				continue
			}
			byKind, _ := st.DefaultsByKind()
			for _, d := range shownDefaults(helpLine(all, st.FlagName())) {
				if d != byKind {
					t.Errorf("help %s: --%s shows default %q; by kind its defaults are %s", cmd, st.FlagName(), d, byKind)
				}
			}
		}
		for _, kind := range aqm.Kinds {
			help, _, err := runOut("help", cmd, "--aqm", kind)
			if err != nil {
				t.Fatalf("help %s --aqm %s: %v", cmd, kind, err)
			}
			for _, st := range instance.Table() {
				if !st.QueueKnob() {
					continue
				}
				line := helpLine(help, st.FlagName())
				takes := st.Kinds == nil || slices.Contains(st.Kinds, kind)
				if !takes {
					if line != "" {
						t.Errorf("help %s --aqm %s lists --%s, which %s does not take", cmd, kind, st.FlagName(), kind)
					}
					continue
				}
				want, _ := instance.KindDefault(st.Key, kind)
				if slices.Contains([]string{"0", "0s", "false"}, want) {
					want = "" // a zero default is shown as none
				}
				got := shownDefaults(line)
				switch {
				case want != "" && !slices.Equal(got, []string{want}):
					t.Errorf("help %s --aqm %s: --%s line %q, want (default %s) alone", cmd, kind, st.FlagName(), line, want)
				case want == "" && len(got) > 0:
					t.Errorf("help %s --aqm %s: --%s shows default %v, which %s does not have", cmd, kind, st.FlagName(), got, kind)
				}
			}
		}
	}
}

// The defaults each kind's help shows, worked out by hand from the
// kernel: sch_codel's target 5 ms, sch_pie's 15 ms and tupdate 15 ms,
// sch_dualpi2's 15 ms and 16 ms, DOCSIS's 10 ms Classic target.
func TestHelpKindDefaults(t *testing.T) {
	tests := []struct{ kind, flag, want string }{
		{"codel", "target", "(default 5ms)"},
		{"fq_codel", "target", "(default 5ms)"},
		{"pie", "target", "(default 15ms)"},
		{"dualpi2", "target", "(default 15ms)"},
		{"docsis", "target", "(default 10ms)"},
		{"pie", "tupdate", "(default 15ms)"},
		{"dualpi2", "tupdate", "(default 16ms)"},
		{"fq_codel", "limit", "(default 10240)"},
		{"dualpi2", "limit", "(default 10000)"},
		{"fq_codel", "ecn", "(default true)"},
	}
	for _, tt := range tests {
		help, _, err := runOut("help", "shell", "--aqm", tt.kind)
		if err != nil {
			t.Fatal(err)
		}
		if line := helpLine(help, tt.flag); !strings.HasSuffix(line, tt.want) {
			t.Errorf("help shell --aqm %s: --%s line %q, want it to end %s", tt.kind, tt.flag, line, tt.want)
		}
	}
	all, _, _ := runOut("help", "shell")
	if line := helpLine(all, "target"); strings.HasSuffix(line, "(default 15ms)") || !strings.Contains(line, "codel 5ms") {
		t.Errorf("help shell: --target line %q: want each kind's default, not one", line)
	}
}

// Every command shows two or three examples, and each example's command
// line parses: its command exists and takes those flags and values.
func TestHelpExamples(t *testing.T) {
	walkCommands(func(c *cli.Command) {
		if n := len(c.Examples); n < 2 || n > 3 {
			t.Errorf("%s: %d examples, want two or three", c.Path(), n)
		}
		for _, e := range c.Examples {
			line := e.Line
			i := strings.Index(line, "pi2hop ")
			if i < 0 || e.What == "" {
				t.Errorf("%s: example %q does not run pi2hop or says nothing of what it does", c.Path(), line)
				continue
			}
			line = line[i+len("pi2hop "):]
			for _, stop := range []string{" -- ", ")", " |", " >"} {
				line, _, _ = strings.Cut(line, stop)
			}
			args := shellWords(line)
			if args[0] == "--version" {
				args[0] = "version" // as Run reads it
			}
			ec, rest, err := app.Lookup(args)
			if err != nil {
				t.Errorf("%s: example %q: %v", c.Path(), e.Line, err)
				continue
			}
			fs, _ := app.Declare(ec)
			if err := fs.Parse(rest); err != nil {
				t.Errorf("%s: example %q: %v", c.Path(), e.Line, err)
			}
			if !strings.HasPrefix(ec.Path(), c.Path()) {
				t.Errorf("%s: example %q runs %s", c.Path(), e.Line, ec.Path())
			}
		}
	})
}

// A usage mistake names the command whose help to read.
func TestUsageErrorNamesCommandHelp(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"shell", "--rate", "10"}, "Run 'pi2hop help shell' for usage.\n"},
		{[]string{"set", "--bogus"}, "Run 'pi2hop help set' for usage.\n"},
		{[]string{"flow", "probe", "--every", "10"}, "Run 'pi2hop help flow probe' for usage.\n"},
		{[]string{"nosuch"}, "Run 'pi2hop help' for usage.\n"},
	}
	for _, tt := range tests {
		_, _, err := runOut(tt.args...)
		var b strings.Builder
		if code := exitCode(err, &b); code != 2 || !strings.HasSuffix(b.String(), tt.want) {
			t.Errorf("%v: exit %d, %q; want 2 and a last line %q", tt.args, code, b.String(), tt.want)
		}
	}
}

// shellWords splits an example's command line into words as a shell
// would, for the quoting examples use: '...' and "..." keep their
// spaces, nothing is expanded.
func shellWords(line string) []string {
	var words []string
	var w strings.Builder
	in, quote := false, rune(0)
	for _, r := range line {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			w.WriteRune(r)
		case r == '\'' || r == '"':
			quote, in = r, true
		case r == ' ' || r == '\t':
			if in {
				words = append(words, w.String())
				w.Reset()
				in = false
			}
		default:
			w.WriteRune(r)
			in = true
		}
	}
	if in {
		words = append(words, w.String())
	}
	return words
}
