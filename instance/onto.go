package instance

import (
	"fmt"
	"reflect"
	"slices"
	"time"

	"github.com/pi2hop/pi2hop/aqm"
)

// An Onto maps a queue knob onto the aqm.Spec field it configures under
// each kind that takes it: QueueSpec lays a value given over the kind's
// defaults through put, and the kind's defaults read back through get
// (KindDefault, help's per-kind defaults). Declared in the knob's row, it
// is the one place that knows where the knob lands.
type Onto struct {
	get func(s *aqm.Spec) (any, bool) // the value as the Settings field holds it (T of *T); false: none (the kind lacks it, or off)
	put func(s *aqm.Spec, v any) error
	// first: laid before the other rows, for its value decides where
	// some of them land (docsis-classic: where alpha and beta go).
	first bool
}

// field maps a knob held in Settings as T onto a field of type F, where
// at finds it in a spec of each kind (nil: the kind lacks it); to and
// from convert between them (from's false: no value, such as a threshold
// turned off).
func field[T, F any](at func(*aqm.Spec) *F, to func(T) (F, error), from func(F) (T, bool)) Onto {
	return Onto{
		get: func(s *aqm.Spec) (any, bool) {
			p := at(s)
			if p == nil {
				return nil, false
			}
			v, ok := from(*p)
			return v, ok
		},
		put: func(s *aqm.Spec, v any) error {
			p := at(s)
			if p == nil {
				return nil
			}
			f, err := to(v.(T))
			if err == nil {
				*p = f
			}
			return err
		},
	}
}

// same is a knob held as the spec holds it.
func same[T any](at func(*aqm.Spec) *T) Onto {
	return field(at, func(v T) (T, error) { return v, nil }, func(v T) (T, bool) { return v, true })
}

// nanos is a time held as a time.Duration in Settings and as ns in aqm.
func nanos(at func(*aqm.Spec) *int64) Onto {
	return field(at, func(d time.Duration) (int64, error) { return int64(d), nil },
		func(ns int64) (time.Duration, bool) { return time.Duration(ns), true })
}

// noneAtZero is o with a zero read back as no value: the FIFO's limit
// and memlimit 0 are none of that kind (the other kinds take neither
// below 1).
func noneAtZero(o Onto) Onto {
	get := o.get
	o.get = func(s *aqm.Spec) (any, bool) {
		v, ok := get(s)
		return v, ok && !reflect.ValueOf(v).IsZero()
	}
	return o
}

// byKind finds a field by the spec's kind: in is each kind's field.
func byKind[F any](in func(s *aqm.Spec) map[string]*F) func(*aqm.Spec) *F {
	return func(s *aqm.Spec) *F { return in(s)[s.Kind] }
}

// inDual finds a field of the DualPI2 configuration, dualpi2's own or
// the one docsis couples its queues with.
func inDual[F any](f func(*aqm.Config) *F) func(*aqm.Spec) *F {
	return func(s *aqm.Spec) *F {
		if c := dualOf(s); c != nil {
			return f(c)
		}
		return nil
	}
}

// dualOf is s's DualPI2 configuration, nil for the kinds without one.
func dualOf(s *aqm.Spec) *aqm.Config {
	switch s.Kind {
	case aqm.KindDualPI2:
		return &s.DualPI2
	case aqm.KindDOCSIS:
		return &s.DOCSIS.DualPI2
	}
	return nil
}

// specFrom lays the queue knobs given in s over spec through each row's
// Onto, in table order, the rows marked first before the others.
func (s Settings) specFrom(spec *aqm.Spec) error {
	return specFromRows(table, reflect.ValueOf(s), spec)
}

// specFromRows is specFrom of the struct v bound to rows.
func specFromRows(rows []Setting, v reflect.Value, spec *aqm.Spec) error {
	for _, first := range []bool{true, false} {
		for _, st := range rows {
			f := v.Field(st.field)
			if st.Onto.put == nil || st.Onto.first != first || f.IsNil() {
				continue
			}
			if err := st.Onto.put(spec, f.Elem().Interface()); err != nil {
				return &FieldError{st.Key, err}
			}
		}
	}
	return nil
}

// specSettings reads the queue knobs of spec back as Settings: the value of
// each knob its kind takes.
func specSettings(spec aqm.Spec) Settings {
	var s Settings
	readSpec(table, spec, reflect.ValueOf(&s).Elem())
	return s
}

// readSpec is specSettings into the settable struct v bound to rows.
func readSpec(rows []Setting, spec aqm.Spec, v reflect.Value) {
	for _, st := range rows {
		if st.Onto.get == nil || st.Kinds != nil && !slices.Contains(st.Kinds, spec.Kind) {
			continue
		}
		x, ok := st.Onto.get(&spec)
		if !ok {
			continue
		}
		p := reflect.New(v.Field(st.field).Type().Elem())
		p.Elem().Set(reflect.ValueOf(x))
		v.Field(st.field).Set(p)
	}
}

// The Ontos of knobs that need more than a field of one type.

// gain is alpha or beta: Hz·256 in Settings, in DualPI2's configuration
// and in DOCSIS-PIE's, sixteenths of Hz in PIE's (0.125 Hz = 32/256 =
// 2/16). Under docsis they are the Classic AQM's gains: DOCSIS-PIE's A
// and B when it is pie (the coupled core's PI2 then idles), the core's
// PI2 gains when it is pi2.
func gainOnto(dual func(*aqm.Config) *uint32, pie func(*aqm.PIEConfig) *uint32, docsisPIE func(*aqm.DOCSISPIEConfig) *uint32) Onto {
	d := same(inDual(dual))
	dp := same(func(s *aqm.Spec) *uint32 { return docsisPIE(&s.DOCSIS.PIE) })
	p := field(func(s *aqm.Spec) *uint32 { return pie(&s.PIE) }, func(hz256 uint32) (uint32, error) {
		if hz256%16 != 0 {
			return 0, fmt.Errorf("%g Hz: PIE takes it in steps of 1/16 Hz (0.0625), 0..2 Hz", float64(hz256)/256)
		}
		return hz256 / 16, nil
	}, func(v uint32) (uint32, bool) { return v * 16, true })
	onto := func(s *aqm.Spec) Onto {
		switch {
		case s.Kind == aqm.KindPIE:
			return p
		case s.Kind == aqm.KindDOCSIS && s.DOCSIS.Classic == aqm.DOCSISClassicPIE:
			return dp
		}
		return d
	}
	return Onto{
		get: func(s *aqm.Spec) (any, bool) { return onto(s).get(s) },
		put: func(s *aqm.Spec, v any) error { return onto(s).put(s, v) },
	}
}

// stepOnto is step_thresh: a time or, in packets, a length, in one field.
var stepOnto = Onto{
	get: func(s *aqm.Spec) (any, bool) {
		c := dualOf(s)
		switch {
		case c == nil:
			return nil, false
		case c.StepInPackets:
			return Step{Packets: uint32(c.StepThresh), InPackets: true}, true
		}
		return Step{Time: time.Duration(c.StepThresh)}, true
	},
	put: func(s *aqm.Spec, v any) error {
		if c := dualOf(s); c != nil {
			st := v.(Step)
			c.StepInPackets, c.StepThresh = st.InPackets, int64(st.Time)
			if st.InPackets {
				c.StepThresh = int64(st.Packets)
			}
		}
		return nil
	},
}

// ceThreshold is CoDel's CE threshold, off (no value) unless given.
func ceThreshold() Onto {
	return field(byKind(func(s *aqm.Spec) map[string]*int64 {
		return map[string]*int64{aqm.KindCoDel: &s.CoDel.CEThreshold, aqm.KindFQCodel: &s.FQCodel.CEThreshold}
	}), func(d time.Duration) (int64, error) { return int64(d), nil },
		func(ns int64) (time.Duration, bool) { return time.Duration(ns), ns != aqm.CEThresholdOff })
}

// ceSelector is fq_codel's ce_threshold_selector, VALUE/MASK: none by
// default (mask 0).
var ceSelector = Onto{
	get: func(s *aqm.Spec) (any, bool) {
		if s.Kind != aqm.KindFQCodel || s.FQCodel.CEMask == 0 {
			return nil, false
		}
		return fmt.Sprintf("%#02x/%#02x", s.FQCodel.CESelector, s.FQCodel.CEMask), true
	},
	put: func(s *aqm.Spec, v any) error {
		if s.Kind != aqm.KindFQCodel {
			return nil
		}
		val, mask, err := ParseSelector(v.(string))
		s.FQCodel.CESelector, s.FQCodel.CEMask = val, mask
		return err
	},
}

// docsisClassic is docsis's Classic AQM, laid first: alpha and beta land
// on its gains.
var docsisClassic = func() Onto {
	o := same(byKind(func(s *aqm.Spec) map[string]*string { return map[string]*string{aqm.KindDOCSIS: &s.DOCSIS.Classic} }))
	o.first = true
	return o
}()
