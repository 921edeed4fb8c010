package hop

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// maxOwnerFields is the most fields any of the owner's structs may have:
// a struct that grows past it holds more than one concern.
const maxOwnerFields = 25

// The owner is split by concern, each part in its own file and small
// enough to read on one screen: the owner itself, its data path, pacer
// and reporter, and the structs they keep by value.
func TestOwnerStructsStaySmall(t *testing.T) {
	want := map[string]string{ // struct -> the file it must be in
		"owner":          "owner.go",
		"dataPath":       "datapath.go",
		"pacer":          "pacer.go",
		"reporter":       "reporter.go",
		"threadCPUClock": "reporter.go",
		"observers":      "observer.go",
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	seen := map[string]bool{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(file, func(n ast.Node) bool {
			ts, ok := n.(*ast.TypeSpec)
			if !ok {
				return true
			}
			st, ok := ts.Type.(*ast.StructType)
			wantFile, listed := want[ts.Name.Name]
			if !ok || !listed {
				return true
			}
			seen[ts.Name.Name] = true
			if f != wantFile {
				t.Errorf("struct %s is in %s, want %s", ts.Name.Name, f, wantFile)
			}
			count := countFields(st)
			if count > maxOwnerFields {
				t.Errorf("struct %s has %d fields, want at most %d: split it by concern", ts.Name.Name, count, maxOwnerFields)
			}
			t.Logf("%s (%s): %d fields", ts.Name.Name, f, count)
			return true
		})
	}
	for name := range want {
		if !seen[name] {
			t.Errorf("struct %s not found: update this test's list with the owner's parts", name)
		}
	}
}

// countFields counts a struct's fields as a reader sees them: each name
// of a multi-name line, and each embedded type, is one.
func countFields(st *ast.StructType) int {
	n := 0
	for _, f := range st.Fields.List {
		n += max(len(f.Names), 1)
	}
	return n
}

// countFields itself: names on one line count apart, an embedded type
// counts once.
func TestCountFields(t *testing.T) {
	src := "package p\ntype s struct {\n\ta, b int\n\tc string\n\tembedded\n}\n"
	file, err := parser.ParseFile(token.NewFileSet(), "p.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	st := file.Decls[0].(*ast.GenDecl).Specs[0].(*ast.TypeSpec).Type.(*ast.StructType)
	if n := countFields(st); n != 4 {
		t.Errorf("countFields = %d, want 4", n)
	}
}
