package layers

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestImportsPointDownTheTable fails on any import, in a package or in its
// tests, of a package on the same row of docs/design.md's table or a row
// above, and on a package the table does not list.
func TestImportsPointDownTheTable(t *testing.T) {
	root, module := moduleRoot(t)
	md, err := os.ReadFile(filepath.Join(root, "docs", "design.md"))
	if err != nil {
		t.Fatal(err)
	}
	rows, err := parseTable(string(md))
	if err != nil {
		t.Fatal(err)
	}
	// Linux's files and the others' (_other.go, _default.go) import
	// differently: both builds are checked.
	var pkgs []pkg
	for _, goos := range []string{"linux", "darwin"} {
		cmd := exec.Command("go", "list", "-e", "-deps", "-test", "-json=ImportPath,ForTest,Imports,Module", "./...")
		cmd.Dir, cmd.Env = root, append(os.Environ(), "GOOS="+goos)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("GOOS=%s go list: %v\n%s", goos, err, stderr.Bytes())
		}
		ps, err := readList(bytes.NewReader(out), module)
		if err != nil {
			t.Fatal(err)
		}
		if len(ps) < 10 {
			t.Fatalf("GOOS=%s go list gave %d packages of %s: want the whole module", goos, len(ps), module)
		}
		pkgs = append(pkgs, ps...)
	}
	for _, v := range check(rows, pkgs) {
		t.Error(v)
	}
	for p := range rows {
		if !slices.ContainsFunc(pkgs, func(q pkg) bool { return q.path == p }) {
			t.Logf("docs/design.md lists %s, which the module does not hold (yet)", p)
		}
	}
}

// moduleRoot returns the directory of the module's go.mod and the
// module's path.
func moduleRoot(t *testing.T) (dir, module string) {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("go env GOMOD: %v", err)
	}
	gomod := strings.TrimSpace(string(out))
	b, err := os.ReadFile(gomod)
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^module\s+(\S+)`).FindSubmatch(b)
	if m == nil {
		t.Fatalf("%s: no module line", gomod)
	}
	return filepath.Dir(gomod), string(m[1])
}

// parseTable reads the package table of the "## Layers" section: each row
// names its packages in backquotes in the first cell. A package's row
// number (0 = top) is its level.
func parseTable(md string) (map[string]int, error) {
	_, sec, ok := strings.Cut(md, "\n## Layers\n")
	if !ok {
		return nil, errors.New("docs/design.md: no \"## Layers\" section")
	}
	if i := strings.Index(sec, "\n## "); i >= 0 {
		sec = sec[:i]
	}
	quoted := regexp.MustCompile("`([^`]+)`")
	rows := map[string]int{}
	n := 0
	for line := range strings.Lines(sec) {
		cells := strings.Split(line, "|")
		if !strings.HasPrefix(line, "|") || len(cells) < 3 {
			continue
		}
		ms := quoted.FindAllStringSubmatch(cells[1], -1)
		if ms == nil {
			continue // the header and its rule
		}
		for _, m := range ms {
			if r, dup := rows[m[1]]; dup {
				return nil, fmt.Errorf("docs/design.md: %s is on rows %d and %d of the layer table", m[1], r+1, n+1)
			}
			rows[m[1]] = n
		}
		n++
	}
	if n == 0 {
		return nil, errors.New("docs/design.md: the Layers section has no package table")
	}
	return rows, nil
}

// pkg is one package of the module as go list -test shows it: path
// without the module prefix, whether this is its test build (the
// package with its _test.go files, or its external _test package), and
// what it imports (module packages only, module prefix removed).
type pkg struct {
	path    string
	test    bool
	imports []string
}

// readList reads go list -json's stream, keeping the module's packages.
// A test build is named "p [p.test]" or "p_test [p.test]"; "p.test" is
// the generated main package, which is skipped.
func readList(r io.Reader, module string) ([]pkg, error) {
	strip := func(s string) (string, bool) {
		s, _, _ = strings.Cut(s, " ")
		if s == module {
			return ".", true
		}
		return strings.CutPrefix(s, module+"/")
	}
	var pkgs []pkg
	dec := json.NewDecoder(bufio.NewReader(r))
	for {
		var p struct {
			ImportPath, ForTest string
			Imports             []string
			Module              *struct{ Path string }
		}
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			return nil, fmt.Errorf("go list output: %w", err)
		}
		if p.Module == nil || p.Module.Path != module || strings.HasSuffix(p.ImportPath, ".test") {
			continue
		}
		path, ok := strip(p.ImportPath)
		if !ok {
			continue
		}
		q := pkg{path: path}
		if p.ForTest != "" {
			// A dependency rebuilt for another package's test is
			// the dependency as it is: skip it.
			if !strings.HasSuffix(p.ImportPath, "_test ["+p.ForTest+".test]") && !strings.HasPrefix(p.ImportPath, p.ForTest+" [") {
				continue
			}
			q.path, _ = strip(p.ForTest)
			q.test = true
		}
		for _, imp := range p.Imports {
			if s, ok := strip(imp); ok && s != q.path {
				q.imports = append(q.imports, s)
			}
		}
		pkgs = append(pkgs, q)
	}
	return pkgs, nil
}

// check returns one line for each import that does not point down rows,
// and for each package rows does not list. An import is reported once:
// for the package if its non-test build has it, else for its tests.
func check(rows map[string]int, pkgs []pkg) []string {
	var bad []string
	seen := map[[2]string]bool{}
	slices.SortStableFunc(pkgs, func(a, b pkg) int {
		if a.test == b.test {
			return 0
		}
		if a.test {
			return 1
		}
		return -1
	})
	for _, p := range pkgs {
		from, ok := rows[p.path]
		if !ok {
			if !seen[[2]string{p.path, ""}] {
				bad = append(bad, fmt.Sprintf("%s has no row in docs/design.md's layer table", p.path))
				seen[[2]string{p.path, ""}] = true
			}
			continue
		}
		who := p.path + " imports"
		if p.test {
			who = p.path + "'s tests import"
		}
		for _, imp := range p.imports {
			to, ok := rows[imp]
			if !ok || seen[[2]string{p.path, imp}] {
				continue // reported as a package without a row
			}
			seen[[2]string{p.path, imp}] = true
			switch {
			case to == from:
				bad = append(bad, fmt.Sprintf("%s %s, on the same row (%d) of docs/design.md's layer table", who, imp, from+1))
			case to < from:
				bad = append(bad, fmt.Sprintf("%s %s (row %d) from row %d: up docs/design.md's layer table", who, imp, to+1, from+1))
			}
		}
	}
	return bad
}
