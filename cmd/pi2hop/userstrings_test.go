package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// internalNote matches what only the project's own notes mean: a seed
// document's number, an issue number, a reference file outside the
// repository. A user reads the source in words instead (the WWDC23
// session, an RFC, the note's publisher).
var internalNote = regexp.MustCompile(`(?i)seed 00|issue [0-9]|l4s-endpoints\.md`)

// TestNoInternalNotesInUserStrings scans every string literal of every
// non-test Go file of the module, so help, lab --list, errors, logs and
// report text alike, and fails naming the place. It excludes nothing:
// comments are internal/commentlint's.
func TestNoInternalNotesInUserStrings(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	files := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "bin") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		files++
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			s, err := strconv.Unquote(lit.Value)
			if err != nil {
				s = lit.Value
			}
			if m := internalNote.FindString(s); m != "" {
				rel, _ := filepath.Rel(root, path)
				t.Errorf("%s:%d: %q in a string a user may read: cite the public source in words", rel, fset.Position(lit.Pos()).Line, m)
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 50 {
		t.Fatalf("scanned %d Go files under %s: is the module root right?", files, root)
	}
}
