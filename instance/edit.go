package instance

import (
	"errors"
	"slices"

	"github.com/pi2hop/pi2hop/hop"
)

// PlanSet is what a `set` request does: the settings the instance runs
// with (base), the request's on top, resolved and checked as a whole into
// the configuration to hand hop.Reconfigure, which changes from cur what
// differs. It returns the merged settings, to keep once the change is
// applied.
func PlanSet(base, set Settings, cur hop.Config) (hop.Config, Settings, error) {
	given := set.Given()
	if len(given) == 0 {
		return cur, base, errors.New("no setting given (e.g. rate, down-delay)")
	}
	for _, k := range given {
		if st, _ := Lookup(k); st.Fixed {
			return cur, base, &FieldError{k, errors.New("cannot change while the hop runs: restart it")}
		}
	}
	merged := base.Merge(set)
	r, err := merged.Resolve(cur.Name)
	if err != nil {
		return cur, base, err
	}
	next := cur
	next.Up, next.Down = r.Up, r.Down
	// Loss models carry state, so a direction's loss changes only when
	// the request names it (its own or both's): the running models stay.
	if set.Loss == nil && set.UpLoss == nil {
		next.Up.Link.Loss = cur.Up.Link.Loss
	}
	if set.Loss == nil && set.DownLoss == nil {
		next.Down.Link.Loss = cur.Down.Link.Loss
	}
	return next, merged, nil
}

// rangeField names the key of set a hop's *hop.RangeError is about: the
// request's own (down-rate when it gave down-rate), else the shared one.
func rangeField(err error, set Settings) error {
	var re *hop.RangeError
	if !errors.As(err, &re) {
		return err
	}
	keys := map[string][]string{
		"rate":  {"rate", "up-rate", "down-rate", "rate-trace", "up-rate-trace", "down-rate-trace"},
		"delay": {"delay", "up-delay", "down-delay"},
		"queue": {"limit", "memlimit"},
	}[re.What]
	given := set.Given()
	for _, k := range keys {
		if slices.Contains(given, k) {
			return &FieldError{k, err}
		}
	}
	if len(keys) > 0 {
		return &FieldError{keys[0], err}
	}
	return err
}
