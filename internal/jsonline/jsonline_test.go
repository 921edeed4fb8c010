package jsonline

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
)

// TestJSONLine: what Line writes parses with encoding/json to the
// values written, strings with quotes, controls and non-UTF-8 included.
func TestJSONLine(t *testing.T) {
	strs := []string{"", "plain", `q"uote\back`, "tab\tnl\nnul\x00", "héllo ✓", "bad\xffutf8", "\u2028"}
	for _, s := range strs {
		var j Line
		j.Begin("x")
		j.Str("s", s)
		j.Int("neg", -5)
		j.Uint("big", math.MaxUint64)
		j.Float("f", 0.1234567891, 6)
		j.Float("nan", math.NaN(), 3)
		j.Bool("b", true)
		j.Object("o")
		j.Null("n")
		j.CloseObject()
		j.Raw("raw", `[1,"a"]`)
		j.Int("after", 1)
		line := j.End()
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
			Raw   []any
			After int
		}
		if err := json.Unmarshal(line, &got); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		want := strings.ToValidUTF8(s, "\uFFFD")
		if got.Type != "x" || got.S != want || got.Neg != -5 || got.Big != math.MaxUint64 || got.F != 0.123457 ||
			got.NaN != nil || !got.B || len(got.O) != 1 || len(got.Raw) != 2 || got.After != 1 {
			t.Errorf("%q parsed as %+v", line, got)
		}
	}
}
