package roottest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// repoRoot is the module's root: this package lives two levels below it.
const repoRoot = "../.."

// readToolList reads the tools=( command:package ... ) list of
// scripts/test-deps.
func readToolList(t *testing.T) map[string]string {
	t.Helper()
	src, err := os.ReadFile(filepath.Join(repoRoot, "scripts", "test-deps"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?s)\ntools=\((.*?)\n\)`).FindSubmatch(src)
	if m == nil {
		t.Fatal("scripts/test-deps: no tools=( ... ) list")
	}
	list := map[string]string{}
	for _, line := range strings.Split(string(m[1]), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		cmd, pkg, ok := strings.Cut(line, ":")
		if !ok || cmd == "" || pkg == "" {
			t.Fatalf("scripts/test-deps: tools entry %q: want command:package", line)
		}
		list[cmd] = pkg
	}
	return list
}

// use is one program a source file runs, and where.
type use struct {
	tool string
	pos  string
}

// toolsInGo returns the programs that src names where it runs or requires
// one: the literal first argument of exec.Command, exec.CommandContext and
// exec.LookPath, the literal tools of roottest.Need and needRoot, and the
// literal program after "netns", "exec", NS or after "--" in an argument
// list. A path counts as its last element (/bin/sh is sh). The script a
// shell is given with -c counts too (programsInShell): a literal, the
// format of an fmt.Sprintf, or a variable the file assigns one of those.
func toolsInGo(fset *token.FileSet, file *ast.File) []use {
	var uses []use
	lit := func(e ast.Expr) (string, bool) {
		b, ok := e.(*ast.BasicLit)
		if !ok || b.Kind != token.STRING {
			return "", false
		}
		s, err := strconv.Unquote(b.Value)
		return s, err == nil
	}
	add := func(e ast.Expr) {
		if s, ok := lit(e); ok && s != "" {
			uses = append(uses, use{filepath.Base(s), fset.Position(e.Pos()).String()})
		}
	}
	// scripts holds what the file assigns to each name: a literal or an
	// fmt.Sprintf of one, so a script built before the call is scanned.
	scripts := map[string]ast.Expr{}
	ast.Inspect(file, func(n ast.Node) bool {
		if a, ok := n.(*ast.AssignStmt); ok && len(a.Lhs) == len(a.Rhs) {
			for i, l := range a.Lhs {
				if id, ok := l.(*ast.Ident); ok {
					scripts[id.Name] = a.Rhs[i]
				}
			}
		}
		return true
	})
	scriptOf := func(e ast.Expr) (string, bool) {
		if id, ok := e.(*ast.Ident); ok && scripts[id.Name] != nil {
			e = scripts[id.Name]
		}
		if c, ok := e.(*ast.CallExpr); ok {
			if f, ok := c.Fun.(*ast.SelectorExpr); ok && f.Sel.Name == "Sprintf" && len(c.Args) > 0 {
				e = c.Args[0]
			}
		}
		return lit(e)
	}
	addShell := func(e ast.Expr) {
		if s, ok := scriptOf(e); ok {
			for _, p := range programsInShell(s) {
				uses = append(uses, use{filepath.Base(p), fset.Position(e.Pos()).String()})
			}
		}
	}
	// maybeProgram: a word after "--" names a program unless it is a
	// flag or an address (a test of how flags and "--" are parsed).
	maybeProgram := func(e ast.Expr) bool {
		w, ok := lit(e)
		return !ok || !strings.HasPrefix(w, "-") && !strings.Contains(w, ":")
	}
	// inArgs finds a program in a list of arguments: "netns", "exec", NS,
	// "prog" (ip netns exec) and "--", "prog" (unshare, pi2hop shell).
	inArgs := func(args []ast.Expr) {
		for i := range args {
			a, _ := lit(args[i])
			b := ""
			if i+1 < len(args) {
				b, _ = lit(args[i+1])
			}
			switch {
			case a == "netns" && b == "exec" && i+3 < len(args):
				add(args[i+3])
			case a == "--" && i+1 < len(args) && maybeProgram(args[i+1]):
				add(args[i+1])
			case (a == "sh" || a == "bash" || a == "/bin/sh" || a == "/bin/bash") && b == "-c" && i+2 < len(args):
				addShell(args[i+2])
			}
		}
	}
	ast.Inspect(file, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CompositeLit:
			inArgs(n.Elts)
		case *ast.CallExpr:
			inArgs(n.Args)
			var name string
			switch fn := n.Fun.(type) {
			case *ast.SelectorExpr:
				if x, ok := fn.X.(*ast.Ident); ok {
					name = x.Name + "." + fn.Sel.Name
				}
			case *ast.Ident:
				name = fn.Name
			}
			switch name {
			case "exec.Command", "exec.LookPath":
				if len(n.Args) > 0 {
					add(n.Args[0])
				}
			case "exec.CommandContext":
				if len(n.Args) > 1 {
					add(n.Args[1])
				}
			case "roottest.Need", "needRoot", "Need":
				for _, a := range n.Args[min(1, len(n.Args)):] {
					add(a)
				}
			}
		}
		return true
	})
	return uses
}

// shellWords are the shell's own words: builtins and keywords that name
// no program. After those in shellNext, the next word is the command.
var (
	shellWords = map[string]bool{"for": true, "in": true, "case": true, "esac": true, "done": true, "fi": true,
		"read": true, "echo": true, "printf": true, "cd": true, "exit": true, "return": true, "export": true,
		"set": true, "trap": true, "wait": true, "kill": true, "test": true, "[": true, "[[": true, "]]": true,
		"true": true, "false": true, "complete": true, "local": true, "shift": true, "eval": true, "source": true,
		".": true, "{": true, "}": true, ":": true}
	shellNext = map[string]bool{"exec": true, "do": true, "then": true, "else": true, "elif": true,
		"if": true, "while": true, "until": true, "!": true, "time": true}
)

// programsInShell returns the programs a shell script runs: the command
// word of each simple command, split at ;, &, |, newlines and command
// substitutions. Words the shell expands ($x, %s of a format) and
// redirections are not programs.
func programsInShell(script string) []string {
	sep := strings.NewReplacer("$(", ";", "`", ";", "&&", ";", "||", ";", "|", ";", "&", ";", "\n", ";", "(", ";", ")", ";")
	var progs []string
	for _, seg := range strings.Split(sep.Replace(script), ";") {
		for _, w := range strings.Fields(seg) {
			if shellNext[w] {
				continue
			}
			if strings.Contains(w, "=") && !strings.ContainsAny(w[:1], "$%\"'<>-") {
				continue // an assignment before the command
			}
			if !shellWords[w] && !strings.ContainsAny(w[:1], "$%\"'0123456789<>-") {
				progs = append(progs, w)
			}
			break // the command word decides; the rest are its arguments
		}
	}
	return progs
}

// commandV matches a script's check for a program: command -v NAME.
var commandV = regexp.MustCompile(`command -v ([A-Za-z0-9_.+-]+)`)

// toolsInScript returns the programs a shell script checks for with
// `command -v`, the form our scripts use before they run one.
func toolsInScript(path string, src []byte) []use {
	var uses []use
	for i, line := range strings.Split(string(src), "\n") {
		for _, m := range commandV.FindAllStringSubmatch(line, -1) {
			if !strings.HasPrefix(m[1], "$") {
				uses = append(uses, use{m[1], path + ":" + strconv.Itoa(i+1)})
			}
		}
	}
	return uses
}

// testTargets are the make targets make test runs.
var testTargets = []string{"test", "lint", "cross"}

// makeVars are the Makefile's variables that name a program, as the
// shell sees them once make has expanded them.
var makeVars = strings.NewReplacer("$(GO)", "go", "$(IDLE)", "chrt", "$(MAKE)", "make")

// toolsInMakefile returns the programs the recipes of the named targets
// run: each recipe (its lines joined where they end in a backslash, make's
// @ and - prefixes dropped) read as a shell script by programsInShell.
// Other make variables are arguments, never the command word.
func toolsInMakefile(path string, src []byte, targets ...string) []use {
	var uses []use
	in := false
	var cmd strings.Builder
	start := 0
	lines := strings.Split(string(src), "\n")
	for i, line := range lines {
		if !strings.HasPrefix(line, "\t") {
			if name, _, ok := strings.Cut(line, ":"); ok && !strings.ContainsAny(name, " \t=$") {
				in = slices.Contains(targets, name)
			} else if strings.TrimSpace(line) != "" && !strings.HasPrefix(line, "#") {
				in = false
			}
			continue
		}
		if !in {
			continue
		}
		if cmd.Len() == 0 {
			start = i + 1
		}
		body := strings.TrimLeft(strings.TrimPrefix(line, "\t"), "@-")
		if strings.HasSuffix(body, "\\") {
			cmd.WriteString(strings.TrimSuffix(body, "\\") + " ")
			continue
		}
		cmd.WriteString(body)
		script := strings.ReplaceAll(stripMakeRefs(strings.ReplaceAll(makeVars.Replace(cmd.String()), "$$", "\x01")), "\x01", "$")
		cmd.Reset()
		for _, p := range programsInShell(script) {
			if !strings.Contains(p, "/") { // a path is the repository's own program
				uses = append(uses, use{p, path + ":" + strconv.Itoa(start)})
			}
		}
	}
	return uses
}

// stripMakeRefs replaces each of make's own references left in a recipe,
// $(VAR) and $(filter ...) with theirs nested, by one word: make expands
// them before the shell runs, into arguments. The shell's $$( is $( once
// toolsInMakefile has set it apart, and stays.
func stripMakeRefs(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 == len(s) || s[i+1] != '(' {
			b.WriteByte(s[i])
			continue
		}
		depth := 0
		j := i + 1
		for ; j < len(s); j++ {
			if s[j] == '(' {
				depth++
			} else if s[j] == ')' {
				if depth--; depth == 0 {
					break
				}
			}
		}
		b.WriteString("MAKEREF")
		i = j
	}
	return b.String()
}

// sourceTools walks the repository and returns every program its Go
// sources and scripts name, by the rules of toolsInGo and toolsInScript.
func sourceTools(t *testing.T) []use {
	t.Helper()
	var uses []use
	fset := token.NewFileSet()
	err := filepath.WalkDir(repoRoot, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(repoRoot, path)
		if d.IsDir() {
			if rel != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "bin" || d.Name() == "testdata" || d.Name() == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		switch {
		case strings.HasSuffix(path, ".go"):
			f, err := parser.ParseFile(fset, path, nil, 0)
			if err != nil {
				return err
			}
			for _, u := range toolsInGo(fset, f) {
				u.pos = strings.TrimPrefix(u.pos, repoRoot+"/")
				uses = append(uses, u)
			}
		case rel == "Makefile":
			src, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			uses = append(uses, toolsInMakefile(rel, src, testTargets...)...)
		case filepath.Dir(rel) == "scripts" && d.Name() != "test-deps":
			src, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			uses = append(uses, toolsInScript(rel, src)...)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return uses
}

// TestToolListCoversTests: every program a test, a script or the code
// runs by name is in scripts/test-deps, so scripts/test-deps installs it on a
// fresh machine and no test passes only where someone installed a tool by
// hand.
func TestToolListCoversTests(t *testing.T) {
	list := readToolList(t)
	uses := sourceTools(t)
	if len(uses) < 10 {
		t.Fatalf("found only %d programs in the sources: the scan is broken", len(uses))
	}
	seen := map[string]bool{}
	var missing []string
	for _, u := range uses {
		seen[u.tool] = true
		if _, ok := list[u.tool]; !ok {
			missing = append(missing, u.pos+": runs "+u.tool+", which scripts/test-deps does not list (add command:package to its tools list)")
		}
	}
	sort.Strings(missing)
	for _, m := range missing {
		t.Error(m)
	}
	// A listed program nothing runs is a stale line: it slows every fresh
	// set-up for nothing.
	for tool := range list {
		if !seen[tool] {
			t.Errorf("scripts/test-deps lists %s, which no test, script or code runs: remove it", tool)
		}
	}
}

// TestToolScan pins what the scan finds in each form it knows.
func TestToolScan(t *testing.T) {
	src := `package x
func f(t *testing.T) {
	needRoot(t, "iperf3", "ip")
	roottest.Need(t, "tcpdump")
	exec.Command("tshark", "-r", p)
	exec.CommandContext(ctx, "iperf3", "-s")
	exec.LookPath("udhcpc")
	exec.Command("ip", "netns", "exec", ns, "ping", "-c1")
	args := []string{"netns", "exec", ns, "udhcpc", "-f"}
	exec.Command("unshare", "--mount", "--", "/bin/sh", "-c", "mount -t tmpfs x /run")
	Run(ctx, []string{"shell", "--", "sleep", "9"})
	script := fmt.Sprintf("exec iperf3 -c $H -p %d && id -u; x=1 grep y | seq 3 >&2; for i in $(seq 3); do printf x; done", 1)
	Run(ctx, []string{"shell", "--", "/bin/bash", "-c", script})
	exec.Command("sh", "-c", "exec /bin/ping -q $H 2>&1")
	exec.Command(bin, "x")
}`
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "x_test.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, u := range toolsInGo(fset, f) {
		got = append(got, u.tool)
	}
	sort.Strings(got)
	want := "bash grep id ip ip iperf3 iperf3 iperf3 mount ping ping seq seq sh sh sleep tcpdump tshark udhcpc udhcpc unshare"
	if strings.Join(got, " ") != want {
		t.Errorf("scan found %q, want %q", strings.Join(got, " "), want)
	}
	sh := toolsInScript("s", []byte("command -v iperf3 >/dev/null || exit 1\ncommand -v \"$x\"\n"))
	if len(sh) != 1 || sh[0].tool != "iperf3" || sh[0].pos != "s:1" {
		t.Errorf("script scan found %v, want iperf3 at s:1", sh)
	}
}
