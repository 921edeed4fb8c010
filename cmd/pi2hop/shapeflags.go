package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/pi2hop/pi2hop/hop/instance"
	"github.com/pi2hop/pi2hop/shaper"
)

// jitterValue is --jitter AMOUNT[,DIST]: 5ms, 5ms,normal.
type jitterValue struct{ j instance.Jitter }

func (v *jitterValue) Set(s string) error {
	amount, dist, _ := strings.Cut(s, ",")
	d, err := time.ParseDuration(amount)
	if err != nil || d < 0 {
		return fmt.Errorf("want AMOUNT[,DIST] like 5ms or 5ms,normal (DIST: uniform, normal, pareto, paretonormal)")
	}
	if dist != "" {
		if _, err := shaper.ParseDist(dist); err != nil {
			return err
		}
	}
	v.j = instance.Jitter{Amount: d, Dist: dist}
	return nil
}

func (v *jitterValue) String() string {
	if v.j.Amount == 0 {
		return ""
	}
	if v.j.Dist == "" {
		return v.j.Amount.String()
	}
	return v.j.Amount.String() + "," + v.j.Dist
}
func (v *jitterValue) Type() string { return "jitter" }

// aggregateValue is --aggregate INTERVAL,SIZE: 4ms,6kb (tc size units).
type aggregateValue struct{ a instance.Aggregate }

func (v *aggregateValue) Set(s string) error {
	iv, size, ok := strings.Cut(s, ",")
	d, err := time.ParseDuration(iv)
	if !ok || err != nil || d <= 0 {
		return fmt.Errorf("want INTERVAL,SIZE like 4ms,6kb (a burst of up to SIZE every INTERVAL)")
	}
	n, err := shaper.ParseSize(size)
	if err != nil || n == 0 || n > 1<<30 {
		return fmt.Errorf("size %q: want 1b..1gb in tc units (1500b, 64k)", size)
	}
	v.a = instance.Aggregate{Interval: d, Bytes: int(n)}
	return nil
}

func (v *aggregateValue) String() string {
	if v.a.Interval == 0 {
		return ""
	}
	return fmt.Sprintf("%v,%db", v.a.Interval, v.a.Bytes)
}
func (v *aggregateValue) Type() string { return "interval,size" }
