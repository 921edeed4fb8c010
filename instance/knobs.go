package instance

import (
	"encoding/json"
	"reflect"

	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/internal/jsonline"
)

// QueueKnobs are the knobs of spec's kind as config objects carry them
// (replay's): every setting the kind takes that reads back from spec
// through its Onto, in the table's order, under its key, its value as
// JSON holds it (a time in ns, a count, a switch) or in the flag's words
// (overload's drop, a step's 1ms, a gain in Hz). A knob reaches them by
// its row alone.
func QueueKnobs(spec aqm.Spec) []jsonline.Field {
	return queueKnobs(table, spec, reflect.TypeFor[Settings]())
}

// queueKnobs is QueueKnobs of rows bound to the struct type t.
func queueKnobs(rows []Setting, spec aqm.Spec, t reflect.Type) []jsonline.Field {
	v := reflect.New(t).Elem()
	readSpec(rows, spec, v)
	var out []jsonline.Field
	for _, st := range rows {
		f := v.Field(st.field)
		if st.Onto.get == nil || f.IsNil() {
			continue
		}
		b, err := json.Marshal(st.value.report(f))
		if err != nil {
			panic("instance: " + st.Key + ": " + err.Error()) // a codec whose value encoding/json cannot encode
		}
		out = append(out, jsonline.Field{Key: st.Key, JSON: string(b), Words: st.bindField(v).String()})
	}
	return out
}
