package layers

import (
	"slices"
	"strings"
	"testing"
)

const sampleTable = "# notes\n\n## Layers\n\ntext `notapackage`\n\n" +
	"| packages | what |\n| --- | --- |\n" +
	"| `top` | the top, `mentioned` in passing |\n" +
	"| `mid`, `mid/peer` | two on a row |\n" +
	"| `leaf` | stdlib only |\n\n## Next\n\n| `other` | not read |\n"

func TestParseTable(t *testing.T) {
	rows, err := parseTable(sampleTable)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"top": 0, "mid": 1, "mid/peer": 1, "leaf": 2}
	if len(rows) != len(want) {
		t.Errorf("rows %v, want %v", rows, want)
	}
	for p, r := range want {
		if got, ok := rows[p]; !ok || got != r {
			t.Errorf("row of %s = %d, %v; want %d", p, got, ok, r)
		}
	}
	for _, bad := range []string{
		"no section",
		"## Layers\n\nno table\n",
		"## Layers\n\n| `a` | x |\n| `b`, `a` | y |\n",
	} {
		if _, err := parseTable(bad); err == nil {
			t.Errorf("parseTable(%q) = nil error", bad)
		}
	}
}

func TestCheck(t *testing.T) {
	rows := map[string]int{"top": 0, "mid": 1, "mid/peer": 1, "leaf": 2}
	for _, tc := range []struct {
		name string
		pkgs []pkg
		want []string // substrings, one per reported line
	}{
		{"down", []pkg{{path: "top", imports: []string{"mid", "leaf"}}, {path: "mid", test: true, imports: []string{"leaf"}}}, nil},
		{"up", []pkg{{path: "leaf", imports: []string{"mid"}}}, []string{"leaf imports mid (row 2) from row 3"}},
		{"up in tests", []pkg{{path: "mid", test: true, imports: []string{"top"}}}, []string{"mid's tests import top (row 1) from row 2"}},
		{"same row", []pkg{{path: "mid", imports: []string{"mid/peer"}}}, []string{"mid imports mid/peer, on the same row (2)"}},
		{"once, as the package's", []pkg{
			{path: "leaf", test: true, imports: []string{"top"}},
			{path: "leaf", imports: []string{"top"}},
		}, []string{"leaf imports top"}},
		{"no row", []pkg{{path: "new", imports: []string{"top"}}, {path: "new", test: true}}, []string{"new has no row"}},
	} {
		got := check(rows, tc.pkgs)
		if len(got) != len(tc.want) {
			t.Errorf("%s: %q, want %d lines like %q", tc.name, got, len(tc.want), tc.want)
			continue
		}
		for i, w := range tc.want {
			if !strings.Contains(got[i], w) {
				t.Errorf("%s: line %q, want it to say %q", tc.name, got[i], w)
			}
		}
	}
}

func TestReadList(t *testing.T) {
	const m = "example.com/m"
	in := `{"ImportPath":"example.com/m/a","Imports":["example.com/m/b","fmt"],"Module":{"Path":"example.com/m"}}
{"ImportPath":"fmt","Imports":["io"]}
{"ImportPath":"example.com/m/b [example.com/m/a.test]","ForTest":"example.com/m/a","Imports":["example.com/m/c"],"Module":{"Path":"example.com/m"}}
{"ImportPath":"example.com/m/a [example.com/m/a.test]","ForTest":"example.com/m/a","Imports":["example.com/m/b [example.com/m/a.test]","example.com/m/d"],"Module":{"Path":"example.com/m"}}
{"ImportPath":"example.com/m/a_test [example.com/m/a.test]","ForTest":"example.com/m/a","Imports":["example.com/m/a [example.com/m/a.test]","example.com/m/e"],"Module":{"Path":"example.com/m"}}
{"ImportPath":"example.com/m/a.test","Imports":["example.com/m/a_test [example.com/m/a.test]"],"Module":{"Path":"example.com/m"}}
`
	pkgs, err := readList(strings.NewReader(in), m)
	if err != nil {
		t.Fatal(err)
	}
	want := []pkg{
		{path: "a", imports: []string{"b"}},
		{path: "a", test: true, imports: []string{"b", "d"}},
		{path: "a", test: true, imports: []string{"e"}},
	}
	if !slices.EqualFunc(pkgs, want, func(x, y pkg) bool {
		return x.path == y.path && x.test == y.test && slices.Equal(x.imports, y.imports)
	}) {
		t.Errorf("readList = %+v, want %+v", pkgs, want)
	}
}
