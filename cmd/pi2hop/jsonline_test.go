package main

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
)

// TestJSONLine: what jsonLine writes parses with encoding/json to the
// values written, strings with quotes, controls and non-UTF-8 included.
func TestJSONLine(t *testing.T) {
	strs := []string{"", "plain", `q"uote\back`, "tab\tnl\nnul\x00", "héllo ✓", "bad\xffutf8", "\u2028"}
	for _, s := range strs {
		var j jsonLine
		j.begin("x")
		j.str("s", s)
		j.int("neg", -5)
		j.uint("big", math.MaxUint64)
		j.float("f", 0.1234567891, 6)
		j.float("nan", math.NaN(), 3)
		j.bool("b", true)
		j.object("o")
		j.null("n")
		j.closeObject()
		j.int("after", 1)
		line := j.end()
		if !strings.HasSuffix(string(line), "}\n") {
			t.Fatalf("line %q does not end in }\\n", line)
		}
		var got struct {
			Type  string
			S     string
			Neg   int64
			Big   uint64
			F     float64
			NaN   *float64
			B     bool
			O     map[string]any
			After int
		}
		if err := json.Unmarshal(line, &got); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		want := strings.ToValidUTF8(s, "\uFFFD")
		if got.Type != "x" || got.S != want || got.Neg != -5 || got.Big != math.MaxUint64 || got.F != 0.123457 ||
			got.NaN != nil || !got.B || len(got.O) != 1 || got.After != 1 {
			t.Errorf("%q parsed as %+v", line, got)
		}
	}
}
