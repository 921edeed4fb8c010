package main

import (
	"bytes"
	"flag"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/pi2hop/pi2hop/internal/cli"
	"github.com/pi2hop/pi2hop/internal/roottest"

	"github.com/pi2hop/pi2hop/internal/clidoc"
	"github.com/spf13/pflag"
)

var updateDocs = flag.Bool("update-docs", false, "rewrite docs/cli.md from the commands' help")

// TestDocsUpToDate fails when docs/cli.md is not what `pi2hop help
// --markdown` prints, so the page cannot drift from the help; `make docs`
// (or this test with -update-docs) rewrites it.
func TestDocsUpToDate(t *testing.T) {
	const path = "../../docs/cli.md"
	got, _, err := runOut("help", "--markdown")
	if err != nil {
		t.Fatal(err)
	}
	if *updateDocs {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v: run make docs", err)
	}
	if got != string(want) {
		t.Errorf("docs/cli.md is stale: run make docs and commit it")
	}
	walkCommands(func(c *cli.Command) {
		if !strings.Contains(got, "\n## pi2hop "+c.Path()+"\n") && !strings.Contains(got, "## pi2hop "+c.Path()+"\n") {
			t.Errorf("docs/cli.md has no heading for %s", c.Path())
		}
	})
}

// TestManPage: the page opens with a valid .TH line (title, section 1),
// has a subsection per command and subcommand, and, where groff is
// installed, formats without a warning.
func TestManPage(t *testing.T) {
	page, _, err := runOut("help", "--man")
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^\.TH PI2HOP 1 "[^"]*" "[^"]*" "[^"]*"\n`).MatchString(page) {
		t.Errorf("man page starts %q, want a .TH line", firstLine(page))
	}
	for _, sec := range []string{"\n.SH NAME\npi2hop \\- ", "\n.SH SYNOPSIS\n", "\n.SH COMMANDS\n"} {
		if !strings.Contains(page, sec) {
			t.Errorf("man page has no %q", sec)
		}
	}
	walkCommands(func(c *cli.Command) {
		if want := "\n.SS \"pi2hop " + strings.ReplaceAll(c.Path(), "-", `\-`) + "\"\n"; !strings.Contains(page, want) {
			t.Errorf("man page has no section %q", want)
		}
	})
	groff, err := exec.LookPath("groff")
	if err != nil {
		if roottest.InCI() {
			t.Fatalf("needs groff, which make test installs (scripts/test-deps): %v", err)
		}
		t.Log("no groff: the page is not formatted")
		return
	}
	cmd := exec.Command(groff, "-man", "-Tutf8", "-ww", "-z")
	cmd.Stdin = strings.NewReader(page)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil || stderr.Len() > 0 {
		t.Errorf("groff -man -ww: %v\n%s", err, stderr.String())
	}
}

// TestBashCompletion sources the bash script in bash and calls its
// function as bash's programmable completion would, with COMP_WORDS and
// COMP_CWORD set.
func TestBashCompletion(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	script, _, err := runOut("completion", "bash")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct{ line, want string }{
		{"pi2hop sh", "share shell"},
		{"pi2hop flow prague-", "prague-send prague-recv"},
		{"pi2hop help flow video-", "video-send video-recv"},
		{"pi2hop completion ", "bash zsh fish"},
		{"pi2hop run --tun ", "offload plain"},
		{"pi2hop stats --j", "--json"},
		{"pi2hop shell --rate 10mbit --dela", "--delay"},
	}
	for _, tt := range tests {
		prog := script + `
complete -p pi2hop >/dev/null || exit 3
read -ra COMP_WORDS <<< "$LINE"
[[ $LINE == *" " ]] && COMP_WORDS+=("")
COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
COMP_LINE=$LINE COMP_POINT=${#LINE}
_pi2hop pi2hop "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
echo "${COMPREPLY[*]}"
`
		cmd := exec.Command(bash, "--norc", "--noprofile", "-c", prog)
		cmd.Env = append(os.Environ(), "LINE="+tt.line)
		out, err := cmd.CombinedOutput()
		if got := strings.TrimSpace(string(out)); err != nil || got != tt.want {
			t.Errorf("%q completes to %q (%v), want %q", tt.line, got, err, tt.want)
		}
	}
}

// TestCompletionScripts: each shell's script names every command and
// flag; zsh and fish check its syntax where they are installed.
func TestCompletionScripts(t *testing.T) {
	for _, shell := range []string{"bash", "zsh", "fish"} {
		script, _, err := runOut("completion", shell)
		if err != nil {
			t.Fatal(err)
		}
		walkCommands(func(c *cli.Command) {
			if !strings.Contains(script, c.Name) {
				t.Errorf("%s script lacks %s", shell, c.Path())
			}
			flagsOf(c).VisitAll(func(f *pflag.Flag) {
				if f.Deprecated == "" && !f.Hidden && !strings.Contains(script, f.Name) {
					t.Errorf("%s script lacks %s --%s", shell, c.Path(), f.Name)
				}
			})
		})
		sh, err := exec.LookPath(shell)
		if err != nil {
			continue
		}
		cmd := exec.Command(sh, "-n")
		cmd.Stdin = strings.NewReader(script)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("%s -n: %v\n%s", shell, err, out)
		}
	}
}

// TestReadme keeps the README a front door: at most 150 lines, every
// relative link to a file that exists (and a heading there when it names
// one), and every pi2hop command line in it one that parses: a command
// of the list and flags that command has.
func TestReadme(t *testing.T) {
	const root = "../../"
	readme, err := os.ReadFile(root + "README.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(readme)
	if n := strings.Count(text, "\n"); n > 150 {
		t.Errorf("README.md has %d lines, want at most 150: move detail to docs/", n)
	}
	for _, m := range regexp.MustCompile(`\]\(([^)#:]+)(#[^)]*)?\)`).FindAllStringSubmatch(text, -1) {
		target, err := os.ReadFile(root + m[1])
		if err != nil {
			t.Errorf("README links to %s: %v", m[1], err)
			continue
		}
		if m[2] != "" && !hasHeading(string(target), m[2][1:]) {
			t.Errorf("README links to %s%s: no such heading", m[1], m[2])
		}
	}
	var lines [][]string
	for _, block := range regexp.MustCompile("(?s)```sh\n(.*?)```").FindAllStringSubmatch(text, -1) {
		lines = append(lines, regexp.MustCompile(`(?m)^(?:sudo )?(?:\./bin/)?pi2hop ([^#\n]*)`).FindAllStringSubmatch(block[1], -1)...)
	}
	if len(lines) < 4 {
		t.Errorf("README shows %d pi2hop command lines, want the four paths'", len(lines))
	}
	for _, m := range lines {
		args := strings.Fields(m[1])
		c, rest, err := app.Lookup(args)
		if err != nil {
			t.Errorf("README: pi2hop %s: %v", m[1], err)
			continue
		}
		fs := flagsOf(c)
		if err := fs.Parse(rest); err != nil {
			t.Errorf("README: pi2hop %s: %v", m[1], err)
		}
	}
}

// hasHeading reports whether a Markdown page has a heading whose GitHub
// anchor is frag.
func hasHeading(page, frag string) bool {
	for _, line := range strings.Split(page, "\n") {
		h, ok := strings.CutPrefix(strings.TrimLeft(line, "#"), " ")
		if !ok || !strings.HasPrefix(line, "#") {
			continue
		}
		if clidoc.Anchor(h) == frag {
			return true
		}
	}
	return false
}
