package instance

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"
)

var updateDocs = flag.Bool("update-docs", false, "rewrite the queue knobs' rows of docs/json.md's config objects from the table (make docs)")

const jsonDoc = "../docs/json.md"

// TestKnobRowsDocumented: docs/json.md documents each queue knob of
// replay's and stats' config objects in a row made from the knob's row
// in the table (knobDocRows), so a knob added to the table is documented
// by `make docs`, not by hand; this fails while the page is stale.
func TestKnobRowsDocumented(t *testing.T) {
	page, err := os.ReadFile(jsonDoc)
	if err != nil {
		t.Fatal(err)
	}
	want, err := withKnobRows(string(page), table, reflect.TypeFor[Settings]())
	if err != nil {
		t.Fatal(err)
	}
	if *updateDocs {
		if err := os.WriteFile(jsonDoc, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if want != string(page) {
		t.Errorf("docs/json.md's rows of the queue knobs (%s) are stale: run make docs and commit it", strings.Join(knobObjects, ", "))
	}
}

// knobDocRows are the rows of docs/json.md's config objects' tables for the
// queue knobs of rows (bound to a struct of type t), in the table's
// order: key, the JSON type and unit of the value the config object
// carries (QueueKnobs), the kinds that take it, its flag, its words and
// tc's keywords.
func knobDocRows(rows []Setting, t reflect.Type) []string {
	v := reflect.New(t).Elem()
	var out []string
	for _, st := range rows {
		if st.Onto.get == nil || st.Dir != "" {
			continue
		}
		b, err := json.Marshal(st.value.report(st.value.fallback()))
		if err != nil {
			panic(err)
		}
		typ := "integer"
		switch {
		case b[0] == '"':
			typ = "string"
		case b[0] == 't' || b[0] == 'f':
			typ = "boolean"
		case strings.ContainsAny(string(b), ".eE"):
			typ = "number"
		}
		meaning := "`--" + st.Key + "`"
		if st.Kinds != nil {
			meaning = strings.Join(st.Kinds, ", ") + ": " + meaning
		}
		if w := st.bindField(v).Words(); w != nil && !st.value.isBool() {
			meaning += ": `" + strings.Join(w, "` or `") + "`"
		}
		if st.TC != nil {
			meaning += " (tc's " + strings.Join(st.TC, ", ") + ")"
		}
		out = append(out, strings.ReplaceAll(fmt.Sprintf("| `%s` (optional) | %s | %s | %s |", st.Key, typ, st.value.unit(), meaning), "|  |", "| |"))
	}
	return out
}

// knobObjects are the config objects that carry the queue knobs
// (QueueKnobs): replay's summary's and stats' rows'.
var knobObjects = []string{"replay.config", "stats.config"}

// withKnobRows is page with the rows of queue knobs (a row of rows with
// an Onto) in the tables of knobObjects replaced by knobDocRows, at each
// table's end; their other rows stay as written.
func withKnobRows(page string, rows []Setting, t reflect.Type) (string, error) {
	for _, object := range knobObjects {
		var err error
		if page, err = withKnobRowsIn(page, object, rows, t); err != nil {
			return "", err
		}
	}
	return page, nil
}

func withKnobRowsIn(page, object string, rows []Setting, t reflect.Type) (string, error) {
	heading := "### object " + object + "\n"
	at := strings.Index(page, heading)
	if at < 0 {
		return "", fmt.Errorf("%s has no %q", jsonDoc, heading)
	}
	knob := map[string]bool{}
	for _, st := range rows {
		knob[st.Key] = st.Onto.get != nil && st.Dir == ""
	}
	lines := strings.SplitAfter(page[at:], "\n")
	var b strings.Builder
	b.WriteString(page[:at])
	inTable, done := false, false
	for _, l := range lines {
		isRow := strings.HasPrefix(l, "|")
		if inTable && !isRow && !done {
			for _, r := range knobDocRows(rows, t) {
				b.WriteString(r + "\n")
			}
			done = true
		}
		inTable = inTable || isRow
		if isRow && !done {
			if key, _, ok := strings.Cut(strings.TrimPrefix(l, "| `"), "`"); ok && knob[key] {
				continue
			}
		}
		b.WriteString(l)
	}
	if !done {
		return "", fmt.Errorf("%s: no table after %q", jsonDoc, heading)
	}
	return b.String(), nil
}
