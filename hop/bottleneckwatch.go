package hop

import (
	"fmt"
	"time"
)

// Whether the hop is the path's bottleneck. A hop that is not never
// builds a queue, so its AQM never acts (DualPI2 "never marks"): a shaper
// upstream or downstream, or a slower link elsewhere, limits the traffic
// first. The owner feeds its counters to a bottleneckWatch as it
// publishes, and the snapshot carries the verdict.

// The rule's figures.
const (
	// NotBottleneckAfter is how long traffic must flow under the rule
	// before the hop says it is not the bottleneck.
	NotBottleneckAfter = 10 * time.Second
	// watchChunk is the span each judgement covers: publishes come every
	// stats interval or whenever a reader asks, and a span as short as
	// that may carry no packet even while traffic flows.
	watchChunk = int64(time.Second)
	// underused is the utilisation under which the link is not full: a
	// link that is the bottleneck runs at its rate whenever traffic
	// waits for it.
	underused = 0.8
	// queueBuilt is the share of a span with a packet waiting from which
	// the queue counts as built. Traffic that a bottleneck elsewhere
	// paces arrives spread out and seldom finds a packet waiting; a
	// standing queue keeps one there all the time; random arrivals under
	// 80 % load find one a minority of the time.
	queueBuilt = 0.25
	// flowing is the share of the rate arriving from which traffic
	// counts as flowing: a ping or a keep-alive does not say where a
	// path's bottleneck is.
	flowing = 0.01
)

// bottleneckWatch applies the rule: traffic flows, the queue never
// builds and utilisation stays under 80 % of the rate for
// NotBottleneckAfter. Only the owner uses it; it allocates nothing.
type bottleneckWatch struct {
	started bool
	// The current span: where it began and the counters then.
	at           int64
	in           uint64
	busy, queued int64
	// The run of spans under the rule: since when (runOn) and the bytes
	// in at its start.
	runOn   bool
	runFrom int64
	runIn   uint64
	// The verdict, and the rate the traffic arrived at over the run.
	elsewhere bool
	pathBps   float64
}

// observe takes the direction's counters at now: inBytes read, the
// link's busy and queued time (ns), with the link's constant rate (0: a
// trace or unlimited, where the rule does not apply).
func (w *bottleneckWatch) observe(now int64, rateBps uint64, inBytes uint64, busy, queued int64) {
	if !w.started {
		w.started, w.at, w.in, w.busy, w.queued = true, now, inBytes, busy, queued
		return
	}
	dt := now - w.at
	if dt < watchChunk {
		return
	}
	secs := float64(dt) / 1e9
	arrived := float64(inBytes-w.in) * 8 / secs
	ok := rateBps > 0 && arrived >= flowing*float64(rateBps) &&
		float64(busy-w.busy) < underused*float64(dt) && float64(queued-w.queued) < queueBuilt*float64(dt)
	switch {
	case !ok:
		w.runOn, w.elsewhere, w.pathBps = false, false, 0
	case !w.runOn:
		w.runOn, w.runFrom, w.runIn = true, w.at, w.in
	}
	if w.runOn && now-w.runFrom >= int64(NotBottleneckAfter) {
		w.elsewhere = true
		w.pathBps = float64(inBytes-w.runIn) * 8 / (float64(now-w.runFrom) / 1e9)
	}
	w.at, w.in, w.busy, w.queued = now, inBytes, busy, queued
}

// NotBottleneckLine is the warning for a direction whose traffic arrives
// at pathBps, limited before it reaches the hop.
func NotBottleneckLine(pathBps float64) string {
	return fmt.Sprintf("not the bottleneck: the path is limited elsewhere at about %.1f Mbit/s", pathBps/1e6)
}
