package shaper

import (
	"fmt"
	"time"
)

// Aggregate makes the link send in bursts, as a Wi-Fi station does with
// frame aggregation (and as netem's "slot" emulates): the link may start
// transmitting only at slot times, every Interval ns from the link's
// origin, and then sends back to back at its rate what the queue holds,
// up to Bytes (at least one packet, so a packet larger than Bytes still
// goes; the packet that crosses the budget is the burst's last). Between
// bursts packets wait in the queue, where the AQM sees their sojourn
// grow. A slot with nothing queued is lost; a packet that arrives later
// waits for the next one. Since the packet that crosses the budget still
// goes, the average rate is at most Bytes plus one packet per Interval
// (and the link's rate). The zero Aggregate is off.
type Aggregate struct {
	Interval int64 `json:"interval"` // ns between slot starts
	Bytes    int   `json:"bytes"`    // a burst's budget: it ends with the packet that crosses it
}

// On reports whether aggregation is configured.
func (a Aggregate) On() bool { return a.Interval > 0 }

// Validate checks an Aggregate that is on: both fields positive.
func (a Aggregate) Validate() error {
	switch {
	case a.Interval == 0 && a.Bytes == 0:
		return nil
	case a.Interval <= 0:
		return fmt.Errorf("aggregate interval %v: must be > 0", time.Duration(a.Interval))
	case a.Bytes <= 0:
		return fmt.Errorf("aggregate bytes %d: must be > 0", a.Bytes)
	}
	return nil
}

func (a Aggregate) String() string {
	if !a.On() {
		return "none"
	}
	return fmt.Sprintf("%v/%dB", time.Duration(a.Interval), a.Bytes)
}

// nextSlot returns the first slot time at or after t that is later than
// the last slot used (slots are origin + k·Interval).
func (a Aggregate) nextSlot(t, origin, last int64) int64 {
	k := (t - origin + a.Interval - 1) / a.Interval
	if t < origin {
		k = 0
	}
	s := origin + k*a.Interval
	if s <= last {
		s = last + a.Interval
	}
	return s
}
