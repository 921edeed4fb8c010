package instance

import (
	"encoding/json"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/hop"
	"github.com/pi2hop/pi2hop/internal/flagvalue"
	"github.com/pi2hop/pi2hop/internal/jsondoc"
	"github.com/pi2hop/pi2hop/internal/jsonline"
	"github.com/pi2hop/pi2hop/replay"
	"github.com/pi2hop/pi2hop/shaper"
)

// TestThrowAwayKnob adds a knob to a copy of the table: one row (its key,
// tc's keyword, the kinds that take it, default, bound, where it lands in
// aqm.Spec) and its field in a copy of Settings' type. From that row alone the
// knob reads and prints as a flag with its default and bound, travels
// as JSON under its key, is refused out of range when JSON carries it,
// lands in the queue's configuration, its per-kind default reads back
// from each kind's defaults, replay's and stats' config objects carry it
// (the summary line replay writes and a stats row, which spell no knob),
// docs/json.md's rows for those objects document it as the outputs carry
// it (make docs writes them), and the table's tests find an example of it. The
// commands' flags, set requests, the page's edits and help iterate the
// same table (TestTableRoundTrip, TestSetReachesEverySetting,
// TestEditTakesEveryLiveSetting, TestOneSpelling), so a row in the real
// table reaches them too. A knob the aqm field alone does not reach
// (a config object spelled by hand again) fails here.
func TestThrowAwayKnob(t *testing.T) {
	knob := Setting{Key: "throwaway-knob", TC: []string{"throwaway_knob"}, Kinds: []string{aqm.KindDualPI2, aqm.KindDOCSIS},
		value: count(flagvalue.Count{N: 7, Max: 1000}), Bound: &Bound{Min: "2", Max: "100", Why: "a made-up range"},
		Onto: same(inDual(func(c *aqm.Config) *uint32 { return &c.Limit })), Usage: "a knob for this test: the queue's `packets`"}
	// aqm.Config has no field for it: it lands where limit does, for
	// this test.
	rows := perDirection(append(slices.Clone(declared), knob))
	var fields []reflect.StructField
	for f := range reflect.TypeFor[Settings]().Fields() {
		fields = append(fields, f)
	}
	fields = append(fields, reflect.StructField{Name: "ThrowawayKnob", Type: reflect.TypeFor[*uint32](), Tag: `json:"throwaway-knob,omitempty"`})
	carrier := reflect.StructOf(fields)
	index, err := bindTable(rows, carrier)
	if err != nil {
		t.Fatal(err)
	}
	row := rows[index["throwaway-knob"]]
	v := reflect.New(carrier).Elem()

	// The flag: default, bound, value.
	flag := row.bindField(v)
	if flag.String() != "7" {
		t.Errorf("the knob's flag prints %q before it is given, want its default 7", flag.String())
	}
	if err := flag.Set("1"); err == nil || !strings.Contains(err.Error(), "accepted: 2..100") {
		t.Errorf("--throwaway-knob 1: %v, want the range refused", err)
	}
	if err := flag.Set("42"); err != nil || flag.String() != "42" {
		t.Fatalf("--throwaway-knob 42: %v, prints %q", err, flag.String())
	}

	// JSON, as a set request carries it: its key, and the bound checked.
	b, err := json.Marshal(v.Interface())
	if err != nil || !strings.Contains(string(b), `"throwaway-knob":42`) {
		t.Errorf("JSON %s (%v), want the knob under its key", b, err)
	}
	bad := reflect.New(carrier)
	if err := json.Unmarshal([]byte(`{"throwaway-knob": 500}`), bad.Interface()); err != nil {
		t.Fatal(err)
	}
	if err := checkRows(rows, bad.Elem()); err == nil || !strings.Contains(err.Error(), "throwaway-knob: 500 is above 100") {
		t.Errorf("the knob at 500 as JSON carries it: %v, want it refused with its range", err)
	}

	// The queue's configuration, and each kind's default read back.
	for _, kind := range row.Kinds {
		spec, _ := aqm.DefaultSpec(kind)
		if err := specFromRows(rows, v, &spec); err != nil {
			t.Fatal(err)
		}
		if got := dualOf(&spec).Limit; got != 42 {
			t.Errorf("%s: the knob landed as limit %d, want 42", kind, got)
		}
		def, _ := aqm.DefaultSpec(kind)
		back := reflect.New(carrier).Elem()
		readSpec(rows, def, back)
		if got := row.bindField(back).String(); got != "10000" {
			t.Errorf("%s: the knob's default reads back as %q, want the kind's limit 10000", kind, got)
		}
	}
	spec, _ := aqm.DefaultSpec(aqm.KindCoDel)
	readSpec(rows, spec, v)
	if got := row.bindField(v).String(); got != "42" {
		t.Errorf("codel does not take the knob, yet its defaults set it to %q", got)
	}
	if text, ok := derivedExample(row, carrier); !ok {
		t.Errorf("the table's tests find no example of the knob")
	} else if text != "100" {
		t.Errorf("the knob's example %q, want its bound's top, 100", text)
	}
	throwAwayReachesReplay(t, rows, row, carrier)
}

// throwAwayReachesReplay: the knob row, bound to carrier, given 42, is in
// the config object of replay's summary line and of a stats row, and
// docs/json.md with the rows make docs writes documents it as they carry
// it (the page as it stands, without the knob, does not).
func throwAwayReachesReplay(t *testing.T, rows []Setting, row Setting, carrier reflect.Type) {
	v := reflect.New(carrier).Elem()
	if err := row.bindField(v).Set("42"); err != nil {
		t.Fatal(err)
	}
	spec, _ := aqm.DefaultSpec(aqm.KindDualPI2)
	if err := specFromRows(rows, v, &spec); err != nil {
		t.Fatal(err)
	}
	knobs := queueKnobs(rows, spec, carrier)
	i := slices.IndexFunc(knobs, func(k jsonline.Field) bool { return k.Key == "throwaway-knob" })
	if i < 0 || knobs[i].JSON != "42" || knobs[i].Words != "42" {
		t.Fatalf("queue knobs %v: want throwaway-knob as 42", knobs)
	}
	line := replay.WriteSummary(&jsonline.Line{}, &replay.Result{}, replay.SummaryInput{Trace: "t.csv", Seed: 1, MTU: 1500, Queue: knobs},
		shaper.Config{Rate: shaper.Const{BitsPerSecond: 1e6}}, spec)
	var summary struct{ Config json.RawMessage }
	if err := json.Unmarshal(line, &summary); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(summary.Config), `"throwaway-knob":42`) {
		t.Errorf("replay's config object %s: want the knob under its key", summary.Config)
	}
	stats, err := json.Marshal(hop.ConfigRow{Qdisc: spec.Kind, Params: map[string]any{}, Knobs: knobs})
	if err != nil || !strings.Contains(string(stats), `"throwaway-knob":42`) {
		t.Errorf("stats' config object %s (%v): want the knob under its key", stats, err)
	}
	page, err := os.ReadFile(jsonDoc)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := withKnobRows(string(page), rows, carrier)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		page    string
		flagged bool
	}{{doc, false}, {string(page), true}} {
		schema, err := jsondoc.Parse([]byte(tc.page), "docs/json.md")
		if err != nil {
			t.Fatal(err)
		}
		errs := append(schema.Check("replay", "replay.config", summary.Config), schema.Check("stats", "stats.config", stats)...)
		if flagged := slices.ContainsFunc(errs, func(e string) bool { return strings.Contains(e, "throwaway-knob") }); flagged != tc.flagged || !tc.flagged && len(errs) > 0 {
			t.Errorf("docs/json.md (rows of the knob written: %v) against %s: %q", !tc.flagged, summary.Config, errs)
		}
	}
}
