package commentlint

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// written are documents the program writes, not ones a comment cites:
// a comment may name them without the repository holding them.
var written = map[string]bool{
	"report.md": true, // the lab's report (testbed/report)
}

// moduleRoot is the folder holding go.mod, above this package's folder.
func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		up := filepath.Dir(dir)
		if up == dir {
			t.Fatal("no go.mod above the test's folder")
		}
		dir = up
	}
}

// goFiles lists the module's .go files, skipping hidden folders and any
// nested module.
func goFiles(t *testing.T, root string) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if path != root && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			if path != root {
				if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
					return filepath.SkipDir
				}
			}
			return nil
		}
		if strings.HasSuffix(path, ".go") {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(files)
	return files
}

// cited reports whether a citation names a file the repository holds:
// by its path from the module root or from the citing file's folder, or,
// for a bare file name, anywhere in the tree.
func cited(root, fileDir, ref string, names map[string]bool) bool {
	if written[ref] {
		return true
	}
	if strings.HasPrefix(ref, "/") {
		return false
	}
	for _, base := range []string{root, fileDir} {
		if _, err := os.Stat(filepath.Join(base, filepath.FromSlash(ref))); err == nil {
			return true
		}
	}
	return !strings.Contains(ref, "/") && names[ref] && !strings.HasSuffix(ref, ".md")
}

// TestTree holds the repository to the rules: every comment in every .go
// file, tests included, is free of dates, issue numbers and session
// history, and cites only documents the repository holds.
func TestTree(t *testing.T) {
	root := moduleRoot(t)
	files := goFiles(t, root)
	if len(files) == 0 {
		t.Fatal("no .go files found under", root)
	}
	names := map[string]bool{}
	for _, f := range files {
		names[filepath.Base(f)] = true
	}
	fset := token.NewFileSet()
	var bad []string
	for _, path := range files {
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			t.Errorf("%v", err)
			continue
		}
		rel, _ := filepath.Rel(root, path)
		for _, g := range f.Comments {
			bad = append(bad, check(fset, g, rel, root, filepath.Dir(path), names)...)
		}
	}
	for _, b := range bad {
		t.Error(b)
	}
	if len(bad) > 0 {
		t.Logf("%d comments to rewrite: figures go to docs/performance.md with the command that measures them, design notes to docs/design.md", len(bad))
	}
}

// groupText joins a comment group's comments, markers stripped, one per
// line, so that a citation or date broken across lines is read whole;
// lineAt maps an offset in it back to a line of the file.
func groupText(fset *token.FileSet, g *ast.CommentGroup) (text string, lineAt func(off int) int) {
	var b strings.Builder
	var starts, lines []int
	for _, c := range g.List {
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		starts = append(starts, b.Len())
		lines = append(lines, fset.Position(c.Slash).Line)
		t := c.Text
		if strings.HasPrefix(t, "//") {
			t = t[2:]
		} else {
			t = strings.TrimSuffix(strings.TrimPrefix(t, "/*"), "*/")
		}
		b.WriteString(t)
	}
	text = b.String()
	return text, func(off int) int {
		k := sort.SearchInts(starts, off+1) - 1
		return lines[k] + strings.Count(text[starts[k]:off], "\n")
	}
}

func check(fset *token.FileSet, g *ast.CommentGroup, rel, root, dir string, names map[string]bool) []string {
	var out []string
	text, line := groupText(fset, g)
	for _, h := range Match(text) {
		out = append(out, fmt.Sprintf("%s:%d: comment records %s: %q", rel, line(h.Offset), h.Rule, h.Text))
	}
	for _, ref := range Citations(text) {
		if !cited(root, dir, ref, names) {
			off := max(strings.Index(text, ref), 0)
			out = append(out, fmt.Sprintf("%s:%d: comment cites %s, which the repository does not hold", rel, line(off), ref))
		}
	}
	return out
}
