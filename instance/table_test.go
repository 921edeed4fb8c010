package instance

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/pi2hop/pi2hop/aqm"
)

// tableExamples is a value other than the default for each setting's
// flag, as a user types it ("" for rate traces: a file the test writes).
var tableExamples = map[string]string{
	"rate": "5mbit", "delay": "10ms", "loss": "1%", "rate-trace": "",
	"up-loss": "2", "down-loss": "ge:p=1,r=30",
	"up-rate": "5mbit", "down-rate": "unlimited", "up-delay": "3ms", "down-delay": "4ms", "up-rate-trace": "", "down-rate-trace": "",
	"aqm": "fifo", "limit": "100p", "memlimit": "64k", "target": "5ms", "tupdate": "10ms", "alpha": "0.25", "beta": "2",
	"coupling": "3", "step-thresh": "3p", "min-qlen-step": "2", "overload": "overflow", "drop-at": "enqueue",
	"classic-protection": "25%", "ecn-mask": "any", "max-rtt": "200ms", "typical-rtt": "20ms", "mtu": "9000", "seed": "7", "force": "true",
	"nqb": "true", "ecn": "true", "codel-interval": "50ms", "ce-threshold": "1ms", "ce-threshold-selector": "0x01/0x01",
	"flows": "64", "quantum": "300", "drop-batch": "8", "bytemode": "true", "dq-rate-estimator": "true",
	"queue-protection": "false", "maxth": "2ms", "docsis-classic": "pi2",
	"jitter": "2ms,normal", "aggregate": "4ms,6kb", "up-jitter": "1ms", "down-jitter": "1ms,pareto",
	"up-aggregate": "2ms,3kb", "down-aggregate": "1ms,1500b",
	"ecn-fault": "ce-bleach,after", "up-ecn-fault": "bleach,after=100p,proto=udp", "down-ecn-fault": "mangle,share=30%",
}

// exampleOf is st's example: tableExamples', or for a row it lacks (a
// knob just added) the first of its bounds, its words and a few values
// of each unit that its flag reads, its bound keeps and prints otherwise
// than the default.
func exampleOf(st Setting) (string, bool) {
	if text, ok := tableExamples[st.Key]; ok {
		return text, true
	}
	return derivedExample(st, reflect.TypeFor[Settings]())
}

// derivedExample is exampleOf's choice for st bound to a struct of type t.
func derivedExample(st Setting, t reflect.Type) (string, bool) {
	var candidates []string
	if b := st.Bound; b != nil {
		candidates = append(candidates, b.Max, b.Min)
	}
	zero := reflect.New(t).Elem()
	candidates = append(candidates, st.bindField(zero).Words()...)
	candidates = append(candidates, "true", "false", "2", "3", "7", "300", "3ms", "7ms", "64k", "5mbit", "0.25")
	def := st.bindField(zero).String()
	for _, text := range candidates {
		v := reflect.New(t).Elem()
		f := st.bindField(v)
		if text != "" && f.Set(text) == nil && checkRows([]Setting{st}, v) == nil && f.String() != def {
			return text, true
		}
	}
	return "", false
}

// Every setting's flag reads its example, prints what reads back to the
// same value, and the value reaches the configuration: the directions it
// names (both, or its own with Dir), or the hop's MTU and seed.
func TestTableRoundTrip(t *testing.T) {
	trace := filepath.Join(t.TempDir(), "r.trace")
	if err := os.WriteFile(trace, []byte("1\n2\n2\n4\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, st := range Table() {
		t.Run(st.Key, func(t *testing.T) {
			text, ok := exampleOf(st)
			if !ok {
				t.Fatalf("no example for %q: add one to tableExamples", st.Key)
			}
			if text == "" {
				text = trace
			}
			var base Settings
			if st.Kinds != nil && !slices.Contains(st.Kinds, aqm.KindDualPI2) {
				base.AQM = &st.Kinds[0]
			}
			s := base
			v := st.Bind(&s)
			if err := v.Set(text); err != nil {
				t.Fatalf("--%s %s: %v", st.FlagName(), text, err)
			}
			if got := s.Given(); !slices.Contains(got, st.Key) {
				t.Fatalf("--%s %s: settings give %v", st.FlagName(), text, got)
			}
			back := base
			if err := st.Bind(&back).Set(v.String()); err != nil || !sameJSON(t, s, back) {
				t.Errorf("--%s %s prints %q, which reads back as %s (%v)", st.FlagName(), text, v.String(), mustJSON(t, back), err)
			}

			if st.Lifts {
				// It reaches the configuration by letting a delay
				// beyond its bound in.
				base.Delay, s.Delay = ptr(20*time.Second), ptr(20*time.Second)
				if _, err := base.Resolve("t"); err == nil {
					t.Fatal("delay 20s accepted without --force")
				}
				if _, err := s.Resolve("t"); err != nil {
					t.Fatalf("delay 20s --force: %v", err)
				}
				return
			}
			c0, err := base.Resolve("t")
			if err != nil {
				t.Fatal(err)
			}
			c1, err := s.Resolve("t")
			if err != nil {
				t.Fatalf("--%s %s: %v", st.FlagName(), text, err)
			}
			up, down := c0.Up.Changes(c1.Up), c0.Down.Changes(c1.Down)
			hopWide := c0.MTU != c1.MTU || c0.Seed != c1.Seed
			switch {
			case st.Dir == "up" && (up == 0 || down != 0),
				st.Dir == "down" && (down == 0 || up != 0),
				st.Dir == "" && !hopWide && (up == 0 || down == 0):
				t.Errorf("--%s %s changes up %v, down %v, MTU or seed %v", st.FlagName(), text, up, down, hopWide)
			}
		})
	}
}

func mustJSON(t *testing.T, s Settings) string {
	t.Helper()
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func sameJSON(t *testing.T, a, b Settings) bool { return mustJSON(t, a) == mustJSON(t, b) }

// tcKeywords are the words tc(8) takes for each queue discipline (the
// synopses of tc-dualpi2, tc-codel, tc-pie, tc-fq_codel, tc-bfifo) and
// for netem's link (tc-netem). DOCSIS's low-latency queue has no qdisc in
// Linux, so no keywords.
var tcKeywords = map[string][]string{
	aqm.KindDualPI2: {"limit", "memlimit", "target", "tupdate", "alpha", "beta", "step_thresh", "min_qlen_step",
		"coupling_factor", "drop_on_overload", "overflow", "drop_enqueue", "drop_dequeue", "classic_protection",
		"l4s_ect", "any_ect", "split_gso", "no_split_gso", "max_rtt", "typical_rtt"},
	aqm.KindFIFO:  {"limit"},
	aqm.KindCoDel: {"limit", "target", "interval", "ecn", "noecn", "ce_threshold"},
	aqm.KindPIE: {"limit", "target", "tupdate", "alpha", "beta", "ecn", "noecn", "bytemode", "nobytemode",
		"dq_rate_estimator", "no_dq_rate_estimator"},
	aqm.KindFQCodel: {"limit", "flows", "target", "interval", "quantum", "ecn", "noecn", "ce_threshold",
		"ce_threshold_selector", "memory_limit", "drop_batch"},
	aqm.KindDOCSIS: nil,
	"netem": {"limit", "delay", "distribution", "loss", "random", "state", "gemodel", "ecn", "corrupt",
		"duplicate", "reorder", "gap", "rate", "slot", "packets", "bytes"},
}

// A setting's tc names are real keywords of a qdisc that takes it (of any,
// netem's link included, for a setting of every kind).
func TestTableTCNames(t *testing.T) {
	for _, st := range Table() {
		for _, kw := range st.TC {
			found := false
			for q, words := range tcKeywords {
				takes := st.Kinds == nil || slices.Contains(st.Kinds, q)
				found = found || takes && slices.Contains(words, kw)
			}
			if !found {
				t.Errorf("%s: %q is not tc's keyword for it (kinds %v)", st.Key, kw, st.Kinds)
			}
		}
	}
	// A choice between tc's words reads them too: --overload drop_on_overload.
	for _, key := range []string{"overload", "drop-at", "ecn-mask"} {
		st, _ := Lookup(key)
		for _, kw := range st.TC {
			var s Settings
			if err := st.Bind(&s).Set(kw); err != nil {
				t.Errorf("--%s %s: %v", st.FlagName(), kw, err)
			}
		}
	}
}

// The kinds each knob configures (as QueueSpec refused knobs before the
// table held them), which settings auto-tuning sets and which a running hop
// cannot change.
func TestTableKinds(t *testing.T) {
	takes := map[string][]string{
		aqm.KindDualPI2: {"memlimit", "target", "tupdate", "alpha", "beta", "coupling", "step-thresh",
			"min-qlen-step", "overload", "drop-at", "classic-protection", "ecn-mask",
			"max-rtt", "typical-rtt", "nqb"},
		aqm.KindFIFO:    {"memlimit"},
		aqm.KindCoDel:   {"target", "codel-interval", "ecn", "ce-threshold"},
		aqm.KindPIE:     {"target", "tupdate", "alpha", "beta", "ecn", "bytemode", "dq-rate-estimator"},
		aqm.KindFQCodel: {"memlimit", "target", "codel-interval", "ecn", "ce-threshold", "ce-threshold-selector", "flows", "quantum", "drop-batch"},
		aqm.KindDOCSIS: {"memlimit", "target", "tupdate", "alpha", "beta", "coupling", "overload",
			"drop-at", "classic-protection", "ecn-mask", "max-rtt", "typical-rtt", "nqb",
			"queue-protection", "maxth", "docsis-classic"},
	}
	want := map[string][]string{} // key: the kinds that take it
	for _, kind := range aqm.Kinds {
		for _, k := range takes[kind] {
			want[k] = append(want[k], kind)
		}
	}
	var tuned, fixed []string
	for _, st := range Table() {
		if w, ok := want[st.Key]; ok && !slices.Equal(st.Kinds, w) {
			t.Errorf("%s configures %v, want %v", st.Key, st.Kinds, w)
		}
		if st.Tuned {
			tuned = append(tuned, st.Key)
		}
		if st.Fixed {
			fixed = append(fixed, st.Key)
		}
	}
	for _, k := range []string{"rate", "delay", "loss", "rate-trace", "jitter", "aggregate", "aqm", "limit", "mtu", "seed"} {
		if st, _ := Lookup(k); st.Kinds != nil {
			t.Errorf("%s configures %v, want every kind", k, st.Kinds)
		}
	}
	if !slices.Equal(tuned, []string{"target", "tupdate", "alpha", "beta"}) {
		t.Errorf("tuned %v", tuned)
	}
	if !slices.Equal(slices.Sorted(slices.Values(fixed)), []string{"aqm", "mtu", "seed"}) {
		t.Errorf("fixed while running %v", fixed)
	}
}

// Every field aqm validates names a setting, by tc's keyword or its
// attribute's name.
func TestErrorKeyNamesSettings(t *testing.T) {
	for field, key := range map[string]string{
		"limit": "limit", "memlimit": "memlimit", "memory_limit": "memlimit", "target": "target",
		"tupdate": "tupdate", "alpha": "alpha", "beta": "beta", "coupling": "coupling",
		"step_thresh": "step-thresh", "classic_protection": "classic-protection", "ecn_mask": "ecn-mask",
		"interval": "codel-interval", "ce_threshold": "ce-threshold", "drop_batch": "drop-batch",
		"flows": "flows", "quantum": "quantum", "maxth": "maxth", "mtu": "mtu",
		"qp_attempts": "qp_attempts", // DOCSIS's internal: no setting
	} {
		if got := ErrorKey(&aqm.ConfigError{Field: field}); got != key {
			t.Errorf("ConfigError %q: key %q, want %q", field, got, key)
		}
	}
}
