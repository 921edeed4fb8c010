package instance

import (
	"fmt"
	"reflect"
)

// A Bound is the range of values of a setting that make physical sense,
// declared in the setting's row in the flag's own words: a value outside
// it is refused wherever the setting is accepted (the flags of every
// command, set requests, the browser view's edits), with Why and the
// range accepted.
type Bound struct {
	Min, Max string // in the flag's words ("8kbit", "10s"); "" for no limit that side
	// Zero: 0 stands for something else (a rate of 0 is unlimited) and is
	// accepted whatever Min says; ZeroName is how it is given.
	Zero      bool
	ZeroName  string
	Why       string // why values outside make no sense
	Forceable bool   // --force accepts a value above Max
}

// Range is the accepted range in the flag's words: "8kbit.. or
// unlimited", "0s..10s".
func (b *Bound) Range() string {
	r := b.Min + ".." + b.Max
	if b.Zero {
		r += " or " + b.ZeroName
	}
	return r
}

// check reports whether the value p (a *T of st's field) is within st's
// bound; force lifts a Forceable bound's Max.
func (st Setting) check(p reflect.Value, force bool) error {
	b := st.Bound
	if b == nil || p.IsNil() {
		return nil
	}
	v := p.Elem()
	if b.Zero && v.IsZero() {
		return nil
	}
	bad := func(limit, side string) bool {
		if limit == "" {
			return false
		}
		l, err := st.value.parse(limit)
		if err != nil {
			panic(fmt.Sprintf("instance: setting %q: bound %q does not read: %v", st.Key, limit, err))
		}
		c := compare(v, l.Elem())
		return side == "min" && c < 0 || side == "max" && c > 0
	}
	text := st.value.format(p)
	switch {
	case bad(b.Min, "min"):
		return fmt.Errorf("%s is below %s, %s; accepted: %s", text, b.Min, b.Why, b.Range())
	case bad(b.Max, "max") && !(b.Forceable && force):
		hint := ""
		if b.Forceable {
			hint = " (--force accepts it)"
		}
		return fmt.Errorf("%s is above %s, %s; accepted: %s%s", text, b.Max, b.Why, b.Range(), hint)
	}
	return nil
}

// compare orders two values of a bounded setting: integers and durations.
func compare(a, b reflect.Value) int {
	switch a.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		x, y := a.Int(), b.Int()
		return cmpOrder(x < y, x > y)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		x, y := a.Uint(), b.Uint()
		return cmpOrder(x < y, x > y)
	}
	panic("instance: a bound on a setting that is not a number: " + a.Type().String())
}

func cmpOrder(less, more bool) int {
	switch {
	case less:
		return -1
	case more:
		return 1
	}
	return 0
}

// Check refuses any value in s outside its setting's bound (--force
// lifts those that say so), as a *FieldError naming the key.
func (s Settings) Check() error { return checkRows(table, reflect.ValueOf(s)) }

// checkRows is Check of the struct v bound to rows.
func checkRows(rows []Setting, v reflect.Value) error {
	force := false
	for _, st := range rows {
		if f := v.Field(st.field); st.Lifts && !f.IsNil() {
			force = f.Elem().Bool()
		}
	}
	for _, st := range rows {
		if err := st.check(v.Field(st.field), force); err != nil {
			return &FieldError{st.Key, err}
		}
	}
	return nil
}
