package flagvalue

import (
	"fmt"
	"strings"
	"time"

	"github.com/pi2hop/pi2hop/shaper"
)

// Jitter is --jitter AMOUNT[,DIST]: 5ms, 5ms,normal. Its fields are
// instance.Jitter's, so one converts to the other.
type Jitter struct {
	Amount time.Duration
	Dist   string // shaper.ParseDist's names; "" is uniform
}

func (v *Jitter) Set(s string) error {
	amount, dist, _ := strings.Cut(s, ",")
	d, err := ParseDuration(amount)
	if err != nil || d < 0 {
		return fmt.Errorf("want AMOUNT[,DIST] like 5ms or 5ms,normal (DIST: uniform, normal, pareto, paretonormal)")
	}
	if dist != "" {
		if _, err := shaper.ParseDist(dist); err != nil {
			return err
		}
	}
	*v = Jitter{Amount: d, Dist: dist}
	return nil
}

func (v *Jitter) String() string {
	if v.Amount == 0 {
		return ""
	}
	if v.Dist == "" {
		return v.Amount.String()
	}
	return v.Amount.String() + "," + v.Dist
}
func (v *Jitter) Type() string { return "jitter" }

// Aggregate is --aggregate INTERVAL,SIZE: 4ms,6kb (tc size units). Its
// fields are instance.Aggregate's, so one converts to the other.
type Aggregate struct {
	Interval time.Duration
	Bytes    int
}

func (v *Aggregate) Set(s string) error {
	iv, size, ok := strings.Cut(s, ",")
	d, err := ParseDuration(iv)
	if !ok || err != nil || d <= 0 {
		return fmt.Errorf("want INTERVAL,SIZE like 4ms,6kb (a burst of up to SIZE every INTERVAL)")
	}
	n, err := shaper.ParseSize(size)
	if err != nil || n == 0 || n > 1<<30 {
		return fmt.Errorf("size %q: want 1b..1gb in tc units (1500b, 64k)", size)
	}
	*v = Aggregate{Interval: d, Bytes: int(n)}
	return nil
}

func (v *Aggregate) String() string {
	if v.Interval == 0 {
		return ""
	}
	return fmt.Sprintf("%v,%db", v.Interval, v.Bytes)
}
func (v *Aggregate) Type() string { return "interval,size" }
