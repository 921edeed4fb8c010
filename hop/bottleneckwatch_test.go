package hop

import (
	"testing"
	"time"
)

// span is one second of a direction as the watch sees it: the bits that
// arrived, the share of it the link was busy and the share a packet
// waited.
type span struct {
	bits         float64
	busy, queued float64
}

// TestBottleneckWatch feeds the watch seconds of counters worked out by
// hand for a 100 Mbit/s link and checks after which second it says the
// hop is not the bottleneck, and the rate it names.
func TestBottleneckWatch(t *testing.T) {
	elsewhere := span{10e6, 0.10, 0.01} // 10 Mbit/s, paced by a shaper upstream
	full := span{98e6, 0.98, 0.9}       // the hop's own queue standing
	idle := span{}
	ping := span{0.5e6, 0.005, 0} // under 1 % of the rate: not traffic
	bursty := span{60e6, 0.6, 0.3}
	repeat := func(s span, n int) []span {
		var out []span
		for range n {
			out = append(out, s)
		}
		return out
	}
	cat := func(ss ...[]span) []span {
		var out []span
		for _, s := range ss {
			out = append(out, s...)
		}
		return out
	}
	for _, tc := range []struct {
		name  string
		rate  uint64
		spans []span
		from  int     // the second from whose end the warning holds; 0: never
		until int     // the last second it holds (0: to the end)
		bps   float64 // the rate named at the end of second from
	}{
		{"paced at 10 Mbit/s: warned after 10 s", 100e6, repeat(elsewhere, 12), 10, 0, 10e6},
		{"9 s of it: not yet", 100e6, repeat(elsewhere, 9), 0, 0, 0},
		{"the hop's own queue", 100e6, repeat(full, 12), 0, 0, 0},
		{"idle", 100e6, repeat(idle, 12), 0, 0, 0},
		{"pings only", 100e6, repeat(ping, 12), 0, 0, 0},
		{"a queue a quarter of the time counts as built", 100e6, repeat(span{10e6, 0.10, 0.25}, 12), 0, 0, 0},
		{"utilisation of 80 % is full", 100e6, repeat(span{80e6, 0.80, 0}, 12), 0, 0, 0},
		{"bursts at 60 %, the queue 30 % of the time", 100e6, repeat(bursty, 12), 0, 0, 0},
		{"a second of full link restarts the 10 s", 100e6, cat(repeat(elsewhere, 6), repeat(full, 1), repeat(elsewhere, 10)), 17, 0, 10e6},
		{"the warning ends with the first full second", 100e6, cat(repeat(elsewhere, 11), repeat(full, 2)), 10, 11, 10e6},
		{"a trace (no constant rate): no rule", 0, repeat(elsewhere, 12), 0, 0, 0},
	} {
		var w bottleneckWatch
		const sec = int64(time.Second)
		var in uint64
		var busy, queued int64
		w.observe(0, tc.rate, 0, 0, 0)
		for i, s := range tc.spans {
			now := int64(i+1) * sec
			// A publish in the middle of a second judges nothing.
			w.observe(now-sec/2, tc.rate, in, busy, queued)
			in += uint64(s.bits / 8)
			busy += int64(s.busy * float64(sec))
			queued += int64(s.queued * float64(sec))
			w.observe(now, tc.rate, in, busy, queued)
			second := i + 1
			want := tc.from > 0 && second >= tc.from && (tc.until == 0 || second <= tc.until)
			if w.elsewhere != want {
				t.Errorf("%s: after second %d: not the bottleneck %v, want %v", tc.name, second, w.elsewhere, want)
			}
			if second == tc.from && w.pathBps != tc.bps {
				t.Errorf("%s: after second %d: path at %.0f bit/s, want %.0f", tc.name, second, w.pathBps, tc.bps)
			}
		}
	}
	if got := NotBottleneckLine(9.84e6); got != "not the bottleneck: the path is limited elsewhere at about 9.8 Mbit/s" {
		t.Errorf("line %q", got)
	}
}
