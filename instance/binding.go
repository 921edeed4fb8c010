package instance

import (
	"cmp"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/internal/flagvalue"
)

// A Setting is one link or queue setting as a user names it, declared once
// in settings.go's table. From the table come the flags of every command
// that takes link settings (each bound to its Settings field), the keys a
// set request may carry and which of them a running hop cannot change, the
// queue kinds a knob configures, and the setting an aqm.ConfigError is
// about.
type Setting struct {
	Key   string   // the one spelling: the flag, Settings' JSON key (its field's tag), set requests, errors, config objects
	TC    []string // tc's keywords for it (tc-dualpi2, tc-codel, tc-pie, tc-fq_codel, tc-netem); none where tc has none
	Kinds []string // the queue kinds it configures, a knob the others refuse; nil: a link setting, or one every kind takes
	Dir   string   // "up" or "down": a per-direction override, a flag only where a command has both directions
	// PerDir names the setting's value in its per-direction rows' help
	// ("one-way `delay`"): when given, up- and down- rows are derived.
	PerDir string
	Tuned  bool   // max-rtt and typical-rtt set it and win over a value given, as in tc
	Fixed  bool   // a running hop cannot change it: a set request naming it is refused
	Usage  string // the flag's help; a `word` in it names the value
	value  codec  // reads and prints the flag's value; holds the default help shows
	Bound  *Bound // the values that make physical sense; nil: whatever the value reads
	Lifts  bool   // configures nothing itself: lets values beyond a Forceable bound in (--force)
	Onto   Onto   // a queue knob: the aqm.Spec field it sets under each kind

	field int // the field's index in Settings
}

// FlagName is the setting's command-line flag: its key.
func (st Setting) FlagName() string { return st.Key }

// FlagValue is a setting's flag bound to its field of a Settings, as a
// pflag.Value: Set reads the text and points the field at the value read,
// String prints the field, or the default while it is nil.
type FlagValue struct {
	st    Setting
	field reflect.Value
}

// Bind returns st's flag bound to its field of s.
func (st Setting) Bind(s *Settings) FlagValue { return st.bindField(reflect.ValueOf(s).Elem()) }

// bindField returns st's flag bound to its field of v, a settable struct
// the table is bound to.
func (st Setting) bindField(v reflect.Value) FlagValue { return FlagValue{st, v.Field(st.field)} }

// SetDefault points st's field of s at the flag's default value unless it
// holds one: what a flag marked given without a value stands for.
func (st Setting) SetDefault(s *Settings) {
	if f := reflect.ValueOf(s).Elem().Field(st.field); f.IsNil() {
		f.Set(st.value.fallback())
	}
}

func (v FlagValue) Set(text string) error {
	p, err := v.st.value.parse(text)
	if err != nil {
		return err
	}
	// A bound --force lifts is checked once every flag is read
	// (Settings.Check), as --force may come after it.
	if b := v.st.Bound; b != nil && !b.Forceable {
		if err := v.st.check(p, false); err != nil {
			return err
		}
	}
	v.field.Set(p)
	return nil
}

func (v FlagValue) String() string { return v.st.value.format(v.field) }

func (v FlagValue) Type() string { return v.st.value.typ() }

// Words lists the words the value may be when it is one of a list (--aqm),
// for shell completion; nil otherwise.
func (v FlagValue) Words() []string { return v.st.value.words() }

// IsBoolFlag makes a switch's flag take no value (--nqb), as pflag's own
// boolean flags.
func (v FlagValue) IsBoolFlag() bool { return v.st.value.isBool() }

// perDirection returns the rows declared, each with PerDir followed by
// its up- and down- rows: the same value, bound and kinds, no default of
// its own (the shared row's value applies unless given).
func perDirection(declared []Setting) []Setting {
	var out []Setting
	for _, st := range declared {
		out = append(out, st)
		if st.PerDir == "" {
			continue
		}
		for _, d := range [...]struct{ dir, link, way string }{{"up", "uplink", "client to server"}, {"down", "downlink", "server to client"}} {
			out = append(out, Setting{Key: d.dir + "-" + st.Key, Dir: d.dir, Kinds: st.Kinds, Bound: st.Bound, value: st.value.noDefault(),
				Usage: fmt.Sprintf("%s %s (%s); default --%s", d.link, st.PerDir, d.way, st.Key)})
		}
	}
	return out
}

// FlagWithDefault returns key's flag bound to its field of s, with the
// default def in the flag's words ("" for none shown) instead of the
// row's: a command with defaults of its own (lab: each scenario has its
// rate) declares the setting's flag so, keeping its key, value and bound.
// A key or default the table cannot read is a mistake in the caller's
// declaration, and panics.
func FlagWithDefault(s *Settings, key, def string) FlagValue {
	st, ok := Lookup(key)
	if !ok {
		panic("instance: no setting " + key)
	}
	v, err := st.value.withDefault(def)
	if err != nil {
		panic(fmt.Sprintf("instance: --%s default %q: %v", key, def, err))
	}
	st.value = v
	return st.Bind(s)
}

// Table returns every setting, in the order help lists their flags.
func Table() []Setting { return slices.Clone(table) }

// Lookup returns the setting of key.
func Lookup(key string) (Setting, bool) {
	i, ok := byKey[key]
	if !ok {
		return Setting{}, false
	}
	return table[i], true
}

// byKey indexes the table by key.
var byKey map[string]int

// init ties each row of the table to its field of Settings: a row naming
// no field, a field with no row, or a row whose value is not its field's
// type is a mistake in the table, caught by any test that loads the
// package.
func init() {
	var err error
	if byKey, err = bindTable(table, reflect.TypeOf(Settings{})); err != nil {
		panic("instance: " + err.Error())
	}
}

// bindTable ties each of rows to the field of the struct type t (Settings,
// or a test's copy with a knob more) whose JSON key is the row's key, and
// indexes the rows by key.
func bindTable(rows []Setting, t reflect.Type) (map[string]int, error) {
	fields := map[string]int{}
	for i := range t.NumField() {
		fields[jsonKey(t.Field(i))] = i
	}
	index := map[string]int{}
	for i := range rows {
		st := &rows[i]
		f, ok := fields[st.Key]
		if !ok {
			return nil, fmt.Errorf("setting %q has no field", st.Key)
		}
		if got, want := st.value.fieldType(), t.Field(f).Type; got != want {
			return nil, fmt.Errorf("setting %q reads %v into a field of type %v", st.Key, got, want)
		}
		if _, dup := index[st.Key]; dup {
			return nil, fmt.Errorf("setting %q declared twice", st.Key)
		}
		st.field = f
		index[st.Key] = i
	}
	for k := range fields {
		if _, ok := index[k]; !ok {
			return nil, fmt.Errorf("field %q has no row in the table", k)
		}
	}
	return index, nil
}

// settingOf returns the key of an aqm.ConfigError's field: aqm names a
// field by tc's keyword or by its netlink attribute, which is the key in
// snake case (step_thresh, ecn_mask).
func settingOf(field string) string {
	if _, ok := byKey[field]; ok {
		return field
	}
	for _, st := range table {
		if strings.ReplaceAll(st.Key, "-", "_") == field || slices.Contains(st.TC, field) {
			return st.Key
		}
	}
	return field
}

// codec reads and prints a setting's value through a flagvalue type, so a
// setting's flag reads, prints and fails as every other flag does.
type codec interface {
	parse(text string) (reflect.Value, error) // a new *T for the field
	format(field reflect.Value) string        // the field (*T) as the flag prints it; nil prints the default
	fallback() reflect.Value                  // a new *T holding the default
	fieldType() reflect.Type                  // *T
	typ() string
	isBool() bool
	words() []string  // the choices, when the value is one of a list
	noDefault() codec // the same value printing "" while unset: no default in help
	withDefault(text string) (codec, error)
	report(field reflect.Value) any // the field (*T, not nil) as config objects carry it, for encoding/json
	unit() string                   // the unit of report's number: ns, bytes, packets, Hz, %; "" for none
}

// flagValue is what a flagvalue type is: a pflag.Value.
type flagValue interface {
	Set(string) error
	String() string
	Type() string
}

// via is a codec over the flagvalue type V: def is the flag's value before
// one is given, get and put convert between V and the field's T.
type via[T, V any, P interface {
	*V
	flagValue
}] struct {
	def   V
	get   func(*V) T
	put   func(*V, T)
	noDef bool // print "" while unset
	// out is the value as config objects carry it when T's own JSON is
	// not it: a word of the flag's (overload's drop), a gain in Hz.
	out func(c via[T, V, P], t T) any
	per string // unit()
}

func of[T, V any, P interface {
	*V
	flagValue
}](def V, get func(*V) T, put func(*V, T)) via[T, V, P] {
	return via[T, V, P]{def: def, get: get, put: put}
}

// in is c whose number is in unit u.
func (c via[T, V, P]) in(u string) via[T, V, P] { c.per = u; return c }

func (c via[T, V, P]) unit() string { return c.per }

func (c via[T, V, P]) noDefault() codec { c.noDef = true; return c }

func (c via[T, V, P]) withDefault(text string) (codec, error) {
	if text == "" {
		return c.noDefault(), nil
	}
	if err := P(&c.def).Set(text); err != nil {
		return nil, err
	}
	c.noDef = false
	return c, nil
}

func (c via[T, V, P]) parse(text string) (reflect.Value, error) {
	v := c.def
	if err := P(&v).Set(text); err != nil {
		return reflect.Value{}, err
	}
	t := c.get(&v)
	return reflect.ValueOf(&t), nil
}

func (c via[T, V, P]) format(field reflect.Value) string {
	v := c.def
	if field.IsNil() && c.noDef {
		return ""
	}
	if !field.IsNil() {
		c.put(&v, *field.Interface().(*T))
	}
	return P(&v).String()
}

func (c via[T, V, P]) fallback() reflect.Value {
	v := c.def
	t := c.get(&v)
	return reflect.ValueOf(&t)
}

func (c via[T, V, P]) report(field reflect.Value) any {
	t := *field.Interface().(*T)
	if c.out != nil {
		return c.out(c, t)
	}
	return t
}

// inWords is a codec whose value config objects carry as the flag prints
// it: a word, or a step's time or packets.
func inWords[T, V any, P interface {
	*V
	flagValue
}](c via[T, V, P]) codec {
	c.out = func(c via[T, V, P], t T) any { return c.format(reflect.ValueOf(&t)) }
	return c
}

func (c via[T, V, P]) fieldType() reflect.Type { return reflect.TypeFor[*T]() }
func (c via[T, V, P]) typ() string             { v := c.def; return P(&v).Type() }

func (c via[T, V, P]) words() []string {
	v := c.def
	if w, ok := any(P(&v)).(interface{ Words() []string }); ok {
		return w.Words()
	}
	return nil
}

func (c via[T, V, P]) isBool() bool {
	v := c.def
	b, ok := any(P(&v)).(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// The codecs of the table, one per kind of value.

// linkRate is a rate in bit/s, 0 for unlimited; def 0: no default shown.
func linkRate(def uint64) codec {
	return of(flagvalue.LinkRate{Rate: flagvalue.Rate{BPS: def}},
		func(v *flagvalue.LinkRate) uint64 { return v.BPS },
		func(v *flagvalue.LinkRate, bps uint64) { v.BPS, v.Unlimited = bps, bps == 0 })
}

func duration(def flagvalue.Duration) codec {
	return of(def,
		func(v *flagvalue.Duration) time.Duration { return v.D },
		func(v *flagvalue.Duration, d time.Duration) { v.D = d }).in("ns")
}

func count(def flagvalue.Count) codec {
	return of(def,
		func(v *flagvalue.Count) uint32 { return v.N },
		func(v *flagvalue.Count, n uint32) { v.N = n }).in(cmp.Or(def.Of, "packets"))
}

func size(def flagvalue.Size) codec {
	return of(def,
		func(v *flagvalue.Size) uint64 { return v.Bytes },
		func(v *flagvalue.Size, n uint64) { v.Bytes = n }).in("bytes")
}

// gain is a PI gain, held as Hz·256 as tc sends it.
// Config objects carry it in Hz, to the 8 decimals that print a
// multiple of 1/256 exactly.
func gain(netlink uint32) codec {
	return via[uint32, flagvalue.Gain, *flagvalue.Gain]{def: flagvalue.Gain{Netlink: netlink},
		get: func(v *flagvalue.Gain) uint32 { return v.Netlink },
		put: func(v *flagvalue.Gain, n uint32) { v.Netlink = n },
		out: func(_ via[uint32, flagvalue.Gain, *flagvalue.Gain], n uint32) any {
			return json.Number(strconv.FormatFloat(aqm.GainHz(n), 'f', 8, 64))
		}, per: "Hz"}
}

func integer[T ~int | ~uint8](def flagvalue.IntRange) codec {
	return of(def,
		func(v *flagvalue.IntRange) T { return T(v.N) },
		func(v *flagvalue.IntRange, n T) { v.N = int(n) }).in(def.Unit)
}

func choice(def flagvalue.Choice) codec {
	return of(def,
		func(v *flagvalue.Choice) string { return v.Val },
		func(v *flagvalue.Choice, s string) { v.Val = s })
}

// choiceOf is a word of c's that stands for a value: words maps each
// choice to its value, def is the default.
func choiceOf[T comparable](c flagvalue.Choice, words map[string]T, def T) codec {
	put := func(v *flagvalue.Choice, x T) {
		for w, wx := range words {
			if wx == x {
				v.Val = w
			}
		}
	}
	put(&c, def)
	return inWords(via[T, flagvalue.Choice, *flagvalue.Choice]{def: c, get: func(v *flagvalue.Choice) T { return words[v.Val] }, put: put})
}

// step is step_thresh: the kernel's default, a time or a packet count.
func step(def aqm.Config) codec {
	v := flagvalue.Step{Time: time.Duration(def.StepThresh)}
	if def.StepInPackets {
		v = flagvalue.Step{Packets: uint32(def.StepThresh), InPackets: true}
	}
	return inWords(via[Step, flagvalue.Step, *flagvalue.Step]{def: v,
		get: func(v *flagvalue.Step) Step { return *v },
		put: func(v *flagvalue.Step, s Step) { *v = s }})
}

func boolean(def bool) codec {
	return of(flagvalue.Bool{B: def},
		func(v *flagvalue.Bool) bool { return v.B },
		func(v *flagvalue.Bool, b bool) { v.B = b })
}

func text() codec {
	return of(flagvalue.Text{},
		func(v *flagvalue.Text) string { return v.S },
		func(v *flagvalue.Text, s string) { v.S = s })
}

func number(def uint64) codec {
	return of(flagvalue.Uint64{N: def},
		func(v *flagvalue.Uint64) uint64 { return v.N },
		func(v *flagvalue.Uint64, n uint64) { v.N = n })
}

// loss keeps the model's text: each direction parses its own model.
func loss() codec {
	return of(flagvalue.Loss{},
		func(v *flagvalue.Loss) string { return v.Text },
		func(v *flagvalue.Loss, s string) { v.Text = s })
}

// ecnFault keeps the fault's spec text; each direction parses it.
func ecnFault() codec {
	return of(flagvalue.ECNFault{},
		func(v *flagvalue.ECNFault) string { return v.Text },
		func(v *flagvalue.ECNFault, s string) { v.Text = s })
}

func jitter() codec {
	return of(flagvalue.Jitter{},
		func(v *flagvalue.Jitter) Jitter { return v.J },
		func(v *flagvalue.Jitter, j Jitter) { v.J = j })
}

func aggregate() codec {
	return of(flagvalue.Aggregate{},
		func(v *flagvalue.Aggregate) Aggregate { return v.A },
		func(v *flagvalue.Aggregate, a Aggregate) { v.A = a })
}
