package jsondoc

import (
	"strings"
	"testing"
)

const page = "# x\n\n### object top\n\n| field | type | unit | meaning |\n|---|---|---|---|\n" +
	"| `n` | integer | packets | a count |\n| `r` | number or null | ms | a figure |\n" +
	"| `kids` | array of object kid | | children |\n| `m` | map of integer | | by reason |\n| `opt` (optional) | string | | sometimes |\n\n" +
	"#### object kid\n\n| field | type | unit | meaning |\n|---|---|---|---|\n| `name` | string | | its name |\n"

func TestCheck(t *testing.T) {
	s, err := Parse([]byte(page), "json.md")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		doc  string
		want []string // parts of the errors, in order; none: valid
	}{
		{`{"n":1,"r":null,"kids":[{"name":"a"}],"m":{"x":2}}`, nil},
		{`{"n":1,"r":2.5,"kids":[],"m":{},"opt":"y"}`, nil},
		{`{"n":1.5,"r":1,"kids":[],"m":{}}`, []string{".n is a number, but json.md says integer"}},
		{`{"n":1,"r":1,"kids":[{"name":"a","age":3}],"m":{}}`,
			[]string{".kids[].age (an integer) is not documented: add a row | `age` | integer | unit | meaning | to the table under \"object kid\" in json.md"}},
		{`{"r":1,"kids":[],"m":{"x":"y"}}`, []string{".m.x is a string, but json.md says integer", ".n is documented (object top in json.md) but missing"}},
	}
	for _, tt := range tests {
		errs := s.Check("out", "top", []byte(tt.doc))
		if len(errs) != len(tt.want) {
			t.Errorf("%s: %d errors %q, want %d", tt.doc, len(errs), errs, len(tt.want))
			continue
		}
		for i, w := range tt.want {
			if !strings.Contains(errs[i], w) {
				t.Errorf("%s: error %q lacks %q", tt.doc, errs[i], w)
			}
		}
	}
}

func TestParseRefusesBadTables(t *testing.T) {
	for _, bad := range []string{
		"### object a\n\n| field | type | unit | meaning |\n|---|---|---|---|\n| `x` | float | | f |\n",
		"### object a\n\n| field | type | unit | meaning |\n|---|---|---|---|\n| `x` | object b | | f |\n",
		"### object a\n\n| field | type | unit | meaning |\n|---|---|---|---|\n| `x` | string | | |\n",
	} {
		if _, err := Parse([]byte(bad), "p.md"); err == nil {
			t.Errorf("Parse accepted %q", bad)
		}
	}
}
