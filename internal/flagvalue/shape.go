package flagvalue

import (
	"fmt"
	"strings"
	"time"

	"github.com/pi2hop/pi2hop/shaper"
)

// Jitter is --jitter AMOUNT[,DIST]: 5ms, 5ms,normal; the flag of a
// shaper.Jitter.
type Jitter struct{ J shaper.Jitter }

func (v *Jitter) Set(s string) error {
	amount, dist, _ := strings.Cut(s, ",")
	d, err := ParseDuration(amount)
	if err != nil || d < 0 {
		return fmt.Errorf("want AMOUNT[,DIST] like 5ms or 5ms,normal (DIST: uniform, normal, pareto, paretonormal)")
	}
	j := shaper.Jitter{Amount: int64(d)}
	if dist != "" {
		if j.Dist, err = shaper.ParseDist(dist); err != nil {
			return err
		}
	}
	v.J = j
	return nil
}

func (v *Jitter) String() string {
	if v.J.Amount == 0 {
		return ""
	}
	if v.J.Dist == shaper.DistUniform {
		return time.Duration(v.J.Amount).String()
	}
	return time.Duration(v.J.Amount).String() + "," + v.J.Dist.String()
}
func (v *Jitter) Type() string { return "jitter" }

// Aggregate is --aggregate INTERVAL,SIZE: 4ms,6kb (tc size units); the
// flag of a shaper.Aggregate.
type Aggregate struct{ A shaper.Aggregate }

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
	v.A = shaper.Aggregate{Interval: int64(d), Bytes: int(n)}
	return nil
}

func (v *Aggregate) String() string {
	if v.A.Interval == 0 {
		return ""
	}
	return fmt.Sprintf("%v,%db", time.Duration(v.A.Interval), v.A.Bytes)
}
func (v *Aggregate) Type() string { return "interval,size" }
