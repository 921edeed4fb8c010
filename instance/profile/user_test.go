package profile

import (
	"strings"
	"testing"
)

func TestParseUser(t *testing.T) {
	for _, tt := range []struct {
		file, data string
		want       string // the flags as key=value, or the error's text
		lines      map[string]int
		title      string
	}{
		{"office.toml", "# my office\ntitle = \"office uplink\"\nrate = \"20mbit\"\n\ndelay = '15ms'\ncoupling = 2\nqueue-protection = true\nsources = [\"measured\"]\n",
			"rate=20mbit delay=15ms coupling=2 queue-protection=true", map[string]int{"rate": 3, "delay": 5, "coupling": 6}, "office uplink"},
		{"office.json", "{\n  \"rate\": \"20mbit\",\n  \"coupling\": 2.5,\n  \"ecn\": false\n}\n",
			"rate=20mbit coupling=2.5 ecn=false", map[string]int{"rate": 2, "coupling": 3, "ecn": 4}, "your profile (office.json)"},
		{"empty.toml", "", "", nil, "your profile (empty.toml)"},
		{"bad.toml", "rate = \"20mbit\"\ndelay = 15ms\n", "bad.toml:2: ", nil, ""},
		{"bad.toml", "rate = \"20mbit\"\n[link]\ndelay = \"1ms\"\n", "bad.toml:2: link: tables are not used here", nil, ""},
		{"bad.toml", "rate = [1, 2]\n", "bad.toml:1: rate: want a string, number or boolean", nil, ""},
		{"bad.toml", "title = 3\n", "bad.toml:1: title: want a string", nil, ""},
		{"bad.json", "{\"rate\": \"1mbit\",\n\"rate\": \"2mbit\"}", "bad.json:2: rate is set twice (first on line 1)", nil, ""},
		{"bad.json", "{\"rate\": \"1mbit\",\n\n\"delay\": }", "bad.json:3: invalid character '}'", nil, ""},
		{"bad.json", "{\"rate\": \"1mbit\",\n\"link\": {\"delay\": 1}}", "bad.json:2: link: objects are not used here", nil, ""},
		{"bad.json", "[1]", "bad.json:1: want an object", nil, ""},
		{"bad.json", "{} {}", "bad.json:1: more after the object", nil, ""},
		{"bad.json", "{\"rate\": \"1mbit\"", "bad.json:1: ", nil, ""},
		{"-x.toml", "", "-x.toml: profile name \"-x\"", nil, ""},
	} {
		p, err := ParseUser(tt.file, []byte(tt.data))
		if tt.lines == nil && tt.title == "" {
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("%s %q: error %v, want one starting %q", tt.file, tt.data, err, tt.want)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tt.file, err)
			continue
		}
		var kv []string
		for _, f := range p.Flags {
			kv = append(kv, f.Key+"="+f.Value)
		}
		if got := strings.Join(kv, " "); got != tt.want || p.Title != tt.title || p.File != tt.file {
			t.Errorf("%s: flags %q title %q file %q, want %q, %q", tt.file, got, p.Title, p.File, tt.want, tt.title)
		}
		for k, l := range tt.lines {
			if p.Lines[k] != l {
				t.Errorf("%s: %s on line %d, want %d", tt.file, k, p.Lines[k], l)
			}
		}
	}
}
