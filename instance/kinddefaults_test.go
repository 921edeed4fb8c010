package instance

import (
	"reflect"
	"testing"

	"github.com/pi2hop/pi2hop/aqm"
)

// kindDefaults is QueueSpec's inverse: laying a kind's defaults over
// nothing gives the kind's default queue back.
func TestKindDefaultsRoundTrip(t *testing.T) {
	for _, kind := range aqm.Kinds {
		d, ok := kindDefaults(kind)
		if !ok {
			t.Fatalf("%s: no defaults", kind)
		}
		k := kind
		d.AQM = &k
		got, err := d.QueueSpec()
		if err != nil {
			t.Fatalf("%s: %v", kind, err)
		}
		want, err := Settings{AQM: &k}.QueueSpec()
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: defaults laid over nothing give\n%+v\nwant\n%+v", kind, got, want)
		}
	}
}

// Each kind's defaults as help shows them, worked out from the kernel
// (sch_dualpi2, sch_codel, sch_pie, sch_fq_codel) and DOCSIS 3.1.
func TestKindDefault(t *testing.T) {
	tests := []struct{ key, kind, want string }{
		{"target", aqm.KindDualPI2, "15ms"},
		{"target", aqm.KindDOCSIS, "10ms"},
		{"target", aqm.KindPIE, "15ms"},
		{"target", aqm.KindCoDel, "5ms"},
		{"target", aqm.KindFQCodel, "5ms"},
		{"tupdate", aqm.KindDualPI2, "16ms"},
		{"tupdate", aqm.KindPIE, "15ms"},
		{"alpha", aqm.KindPIE, "0.125"},
		{"beta", aqm.KindPIE, "1.25"},
		{"limit", aqm.KindDualPI2, "10000"},
		{"limit", aqm.KindFIFO, "1000"},
		{"limit", aqm.KindCoDel, "1000"},
		{"limit", aqm.KindPIE, "1000"},
		{"limit", aqm.KindFQCodel, "10240"},
		{"ecn", aqm.KindCoDel, "false"},
		{"ecn", aqm.KindFQCodel, "true"},
		{"memlimit", aqm.KindFQCodel, "33554432b"},
		{"codel-interval", aqm.KindCoDel, "100ms"},
	}
	for _, tt := range tests {
		if got, ok := KindDefault(tt.key, tt.kind); !ok || got != tt.want {
			t.Errorf("KindDefault(%s, %s) = %q, %v; want %q", tt.key, tt.kind, got, ok, tt.want)
		}
	}
	for _, tt := range []struct{ key, kind string }{
		{"target", aqm.KindFIFO}, {"ce-threshold", aqm.KindCoDel}, {"step-thresh", aqm.KindDOCSIS}, {"rate", aqm.KindDualPI2},
	} {
		if got, ok := KindDefault(tt.key, tt.kind); ok {
			t.Errorf("KindDefault(%s, %s) = %q; want none", tt.key, tt.kind, got)
		}
	}
}
