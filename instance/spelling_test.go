package instance

import (
	"encoding/json"
	"os"
	"reflect"
	"slices"
	"testing"

	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/hop"
	"github.com/pi2hop/pi2hop/internal/jsondoc"
)

// derivedFields are the fields of the config objects that are no
// setting: figures derived from the settings, or the input replayed. Any
// other field must be a setting's key, spelled as its flag.
var derivedFields = map[string][]string{
	"stats.config":  {"qdisc", "params", "tc", "link", "rate_bps"},
	"replay.config": {"trace", "pcap", "profile", "direction", "rate_bps", "lg_range", "service_rate_bps"},
}

// notInReplay are the settings replay's config object leaves out: the
// per-direction ones (replay runs one link), the auto-tuning RTTs (the
// values tuned appear as target, tupdate, alpha and beta) and --force.
func notInReplay(st Setting) bool {
	return st.Dir != "" || st.Key == "max-rtt" || st.Key == "typical-rtt" || st.Lifts
}

// TestOneSpelling: a setting is spelled one way wherever JSON carries it
// — set requests (Settings' tags), stats' config object, replay's config
// object (docs/json.md, which the commands' tests hold the outputs to) —
// and that way is its flag. Replay's object names every setting it runs;
// both objects take the queue's knobs from the table (QueueKnobs).
func TestOneSpelling(t *testing.T) {
	ty := reflect.TypeFor[Settings]()
	for _, st := range Table() {
		if tag := jsonKey(ty.Field(st.field)); tag != st.FlagName() || st.Key != st.FlagName() {
			t.Errorf("setting %q: flag --%s, JSON key %q: want one spelling", st.Key, st.FlagName(), tag)
		}
	}
	page, err := os.ReadFile("../docs/json.md")
	if err != nil {
		t.Fatal(err)
	}
	schema, err := jsondoc.Parse(page, "docs/json.md")
	if err != nil {
		t.Fatal(err)
	}
	for object, derived := range derivedFields {
		fields := schema.Objects[object]
		if len(fields) == 0 {
			t.Fatalf("docs/json.md documents no object %s", object)
		}
		var names []string
		for _, f := range fields {
			names = append(names, f.Name)
			if _, ok := Lookup(f.Name); !ok && !slices.Contains(derived, f.Name) {
				t.Errorf("%s field %q is no setting's key: spell it as the setting's flag, or list it as derived", object, f.Name)
			}
		}
		if object != "replay.config" {
			continue
		}
		for _, st := range Table() {
			if !notInReplay(st) && !slices.Contains(names, st.Key) {
				t.Errorf("replay.config lacks setting %q: a replay runs it, so its config says it", st.Key)
			}
		}
	}
	// Stats' config object as stats --json marshals it, with each kind's
	// knobs: its fields are the ones documented (jsondoc's test holds the
	// values to the page).
	for _, kind := range aqm.Kinds {
		spec, _ := aqm.DefaultSpec(kind)
		b, err := json.Marshal(hop.ConfigRow{Jitter: "1ms", Loss: "1%", Aggregate: "4ms/6000B", ECNFault: "bleach", Knobs: QueueKnobs(spec)})
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		for k := range m {
			if _, ok := Lookup(k); !ok && !slices.Contains(derivedFields["stats.config"], k) {
				t.Errorf("%s: stats config field %q is no setting's key and not derived", kind, k)
			}
		}
	}
}
