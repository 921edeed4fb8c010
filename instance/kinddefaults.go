package instance

import (
	"slices"
	"strings"

	"github.com/pi2hop/pi2hop/aqm"
)

// KindDefault is the value a queue knob (key) takes with queue kind
// kind when it is not given, as the knob's flag prints it; ok is false
// when kind does not take the knob or the default is "off" (no
// ce_threshold). Help shows these, so that --target reads 5ms under
// codel and 15ms under dualpi2: each kind's own kernel default.
func KindDefault(key, kind string) (text string, ok bool) {
	st, found := Lookup(key)
	if !found || st.Kinds == nil && key != "limit" || st.Kinds != nil && !slices.Contains(st.Kinds, kind) {
		return "", false
	}
	d, known := kindDefaults(kind)
	if !known || !d.Has(key) {
		return "", false
	}
	return st.Bind(&d).String(), true
}

// kindDefaults is the queue knobs of kind's configuration when none is
// given, as Settings, read back through each knob's Onto: the inverse of
// QueueSpec, which lays nothing over aqm.DefaultSpec (a test checks that
// it gives the defaults back) but for the FIFO, whose limit is ours.
func kindDefaults(kind string) (Settings, bool) {
	spec, err := Settings{AQM: &kind}.QueueSpec()
	if err != nil {
		return Settings{}, false
	}
	return specSettings(spec), true
}

// Group is the heading help lists st's flag under: "queue" for --aqm and
// the knobs of a queue discipline, "link" for the rest.
func (st Setting) Group() string {
	if st.Kinds != nil || st.Key == "aqm" || st.Key == "limit" {
		return "queue"
	}
	return "link"
}

// QueueKnob reports whether st configures the queue discipline (its
// default depends on --aqm).
func (st Setting) QueueKnob() bool { return st.Group() == "queue" && st.Key != "aqm" }

// DefaultsByKind describes st's default under each kind that takes it,
// in aqm.Kinds order: "15ms" when they agree, else "dualpi2 15ms, pie
// 15ms, codel 5ms, ..."; "" when no kind has one. same says whether they
// agree.
func (st Setting) DefaultsByKind() (text string, same bool) {
	var parts, values []string
	for _, kind := range aqm.Kinds {
		if v, ok := KindDefault(st.Key, kind); ok {
			parts = append(parts, kind+" "+v)
			values = append(values, v)
		}
	}
	if len(values) == 0 {
		return "", true
	}
	if !slices.ContainsFunc(values, func(v string) bool { return v != values[0] }) {
		return values[0], true
	}
	return strings.Join(parts, ", "), false
}

// Alias is a flag spelled as one of tc's keywords where ours differs:
// --coupling-factor N sets --coupling; a switch (Word != "") stands for
// the setting given that word (--overflow is --overload overflow,
// --noecn is --ecn=false).
type Alias struct {
	Name    string // the flag, tc's keyword with dashes: coupling-factor
	Keyword string // tc's keyword: coupling_factor
	Word    string // the value a switch stands for; "" when the alias takes one
}

// TCAliases derives st's aliases from its tc keywords: each keyword
// whose dashed form is not the flag's name. A keyword the value reads as
// a word (drop_on_overload, l4s_ect) or a "no" form of a switch (noecn,
// no_dq_rate_estimator) becomes a switch; the others take a value.
func (st Setting) TCAliases() []Alias {
	var out []Alias
	add := func(name, kw, word string) {
		if name != st.FlagName() && !slices.ContainsFunc(out, func(a Alias) bool { return a.Name == name }) {
			out = append(out, Alias{name, kw, word})
		}
	}
	for _, kw := range st.TC {
		name := strings.ReplaceAll(kw, "_", "-")
		var probe Settings
		switch {
		case st.value.isBool() && (strings.HasPrefix(kw, "no_") || strings.HasPrefix(kw, "no") && strings.ReplaceAll(kw[2:], "_", "-") == st.FlagName()):
			add(name, kw, "false")
		case st.value.isBool():
			add(name, kw, "true")
		case st.value.words() != nil && st.Bind(&probe).Set(kw) == nil:
			add(name, kw, kw)
		default:
			add(name, kw, "")
		}
	}
	// The kernel's own attribute for drop_on_overload (TCA_DUALPI2_DROP_OVERLOAD).
	if st.Key == "overload" {
		add("drop-overload", "drop_on_overload", "drop")
	}
	return out
}
