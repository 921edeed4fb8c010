package instance

import (
	"errors"
	"reflect"
	"slices"

	"github.com/pi2hop/pi2hop/hop"
)

// PlanEdit is what a `set` request does: the settings the instance runs
// with (base), the request's on top, resolved and checked as a whole, and
// the change from the running configuration cur as a hop.Edit. It returns
// the merged settings, to keep once the edit is applied.
func PlanEdit(base, set Settings, cur hop.Config) (hop.Edit, Settings, error) {
	given := set.Given()
	if len(given) == 0 {
		return hop.Edit{}, base, errors.New("no setting given (e.g. rate, down-delay)")
	}
	for _, k := range given {
		if slices.Contains(LiveFixed, k) {
			return hop.Edit{}, base, &FieldError{k, errors.New("cannot change while the hop runs: restart it")}
		}
	}
	merged := base.Merge(set)
	next, err := merged.Resolve(cur.Name)
	if err != nil {
		return hop.Edit{}, base, err
	}
	lossGiven := set.Loss != nil
	return hop.Edit{
		Up:   dirEdit(cur.Up, next.Up, lossGiven),
		Down: dirEdit(cur.Down, next.Down, lossGiven),
	}, merged, nil
}

// dirEdit is the change from cur to next. Loss models carry state, so the
// loss changes only when the request names it.
func dirEdit(cur, next hop.DirConfig, lossGiven bool) hop.DirEdit {
	var e hop.DirEdit
	if !reflect.DeepEqual(cur.Link.Rate, next.Link.Rate) {
		e.Rate = next.Link.Rate
	}
	if cur.Link.Delay != next.Link.Delay {
		d := next.Link.Delay
		e.Delay = &d
	}
	if lossGiven {
		e.Loss, e.SetLoss = next.Link.Loss, true
	}
	if cur.Link.Jitter != next.Link.Jitter {
		j := next.Link.Jitter
		e.Jitter = &j
	}
	if cur.Link.Aggregate != next.Link.Aggregate {
		a := next.Link.Aggregate
		e.Aggregate = &a
	}
	if !reflect.DeepEqual(cur.Queue, next.Queue) {
		q := next.Queue
		e.Queue = &q
	}
	return e
}
