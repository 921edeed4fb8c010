package wire

import "time"

// Clock gives udp_prague timestamps: int32 microseconds since the clock
// was made, wrapping every 71 minutes, never 0 (0 means "no timestamp").
// Differences of two stamps are exact across a wrap as long as they are
// under 35 minutes apart.
type Clock struct{ start time.Time }

// NewClock starts a clock at now.
func NewClock() Clock { return Clock{start: time.Now()} }

// Micros returns the time since the clock started, µs (monotonic, no wrap).
func (c Clock) Micros() int64 { return time.Since(c.start).Microseconds() }

// At returns Micros for an earlier instant given as Unix ns (a kernel
// receive time), or Micros now when unixNano is 0. The time since then is
// measured on the wall clock, which over so short a span runs with the
// monotonic one; it counts as at least 0 and at most the clock's age.
func (c Clock) At(unixNano int64) int64 {
	t := time.Now()
	now := t.Sub(c.start).Microseconds()
	if unixNano == 0 {
		return now
	}
	return now - min(max((t.UnixNano()-unixNano)/1000, 0), now)
}

// Stamp turns a Micros value into a timestamp for the wire.
func Stamp(us int64) int32 {
	ts := int32(uint32(us))
	if ts == 0 {
		ts = 1
	}
	return ts
}

// Since returns now − ts in µs for a wire timestamp, across a wrap.
func Since(now int64, ts int32) int32 { return Stamp(now) - ts }

// Echo keeps the peer's last timestamp frozen on receipt, so that what is
// echoed back excludes the time it was held here (udp_prague's ts_remote):
// the peer's RTT = now − echoed then measures the path only.
type Echo struct {
	offset int32 // our time at receipt minus the peer's timestamp
	valid  bool
}

// Received records the peer's timestamp ts, read at our time now (µs).
func (e *Echo) Received(now int64, ts int32) {
	if ts == 0 {
		return
	}
	e.offset = Stamp(now) - ts
	e.valid = true
}

// Echoed returns the timestamp to echo in a message sent at now: the
// peer's timestamp advanced by the hold time, or 0 before any was received.
func (e *Echo) Echoed(now int64) int32 {
	if !e.valid {
		return 0
	}
	ts := Stamp(now) - e.offset
	if ts == 0 {
		ts = 1
	}
	return ts
}
