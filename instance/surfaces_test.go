package instance

import (
	"encoding/json"
	"reflect"
	"slices"
	"testing"

	"github.com/pi2hop/pi2hop/aqm"
)

// kindsOf are the queue kinds a row configures: its Kinds, or every kind
// for a knob all take (limit).
func kindsOf(st Setting) []string {
	if st.Kinds != nil {
		return st.Kinds
	}
	return aqm.Kinds
}

// TestKnobsReachEveryKind: a queue knob declares where it lands (Onto),
// and under every kind it names, a value given reaches the aqm.Spec the
// hop runs and reads back as given; its default under the kind is the
// one help shows. A knob added to the table without its Onto, or with one
// that misses a kind, fails here.
func TestKnobsReachEveryKind(t *testing.T) {
	for _, st := range Table() {
		if st.Kinds == nil && st.Key != "limit" {
			continue // a link setting
		}
		if st.Onto.put == nil {
			if st.Key != "max-rtt" && st.Key != "typical-rtt" { // they tune target, tupdate, alpha, beta
				t.Errorf("queue knob %q declares no Onto: where does it land in aqm.Spec?", st.Key)
			}
			continue
		}
		for _, kind := range kindsOf(st) {
			k := kind
			s := Settings{AQM: &k}
			example, _ := exampleOf(st)
			if err := st.Bind(&s).Set(example); err != nil {
				t.Fatalf("--%s %s: %v", st.Key, example, err)
			}
			spec, err := s.QueueSpec()
			if err != nil {
				t.Errorf("%s --%s %s: %v", kind, st.Key, example, err)
				continue
			}
			def, _ := aqm.DefaultSpec(kind)
			given, _ := json.Marshal(reflect.ValueOf(s).Field(st.field).Interface())
			back := specSettings(spec)
			got, _ := json.Marshal(reflect.ValueOf(back).Field(st.field).Interface())
			switch _, reads := st.Onto.get(&def); {
			case reads && string(got) != string(given):
				t.Errorf("%s --%s %s: the spec reads back %s, want %s", kind, st.Key, example, got, given)
			case !reads && reflect.DeepEqual(spec, def):
				t.Errorf("%s --%s %s: the spec is the default one", kind, st.Key, example)
			}
			if _, reads := st.Onto.get(&def); reads {
				if _, ok := KindDefault(st.Key, kind); !ok {
					t.Errorf("%s: --%s has no default in help", kind, st.Key)
				}
			}
		}
	}
}

// A set request reaches every setting a running hop can change, and is
// refused for the ones it cannot: the table's Fixed.
func TestSetReachesEverySetting(t *testing.T) {
	cur, err := Settings{}.Resolve("s")
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range Table() {
		if st.Kinds != nil && !slices.Contains(st.Kinds, aqm.KindDualPI2) {
			continue // another kind's knob: refused on this dualpi2 hop (checkKindKeys)
		}
		var set Settings
		text, _ := exampleOf(st)
		if text == "" {
			continue // a file
		}
		if err := st.Bind(&set).Set(text); err != nil {
			t.Fatal(err)
		}
		_, merged, err := PlanSet(Settings{}, set, cur)
		switch {
		case st.Fixed && (err == nil || ErrorKey(err) != st.Key):
			t.Errorf("set %s %s: %v, want it refused naming %s", st.Key, text, err, st.Key)
		case !st.Fixed && err != nil:
			t.Errorf("set %s %s: %v", st.Key, text, err)
		case !st.Fixed && !merged.Has(st.Key):
			t.Errorf("set %s %s: the instance would not keep it", st.Key, text)
		}
	}
}
