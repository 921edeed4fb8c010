package ping

import (
	"testing"
	"time"
)

func TestStealAllowance(t *testing.T) {
	for _, tt := range []struct {
		steal time.Duration
		n     int
		want  time.Duration
	}{
		{steal: -1, n: 60, want: 0},                                         // unknown: nothing to explain with
		{steal: 0, n: 60, want: 0},                                          // no steal seen
		{steal: 20 * time.Millisecond, n: 60, want: time.Millisecond},       // (20+10) ms over 30 round trips
		{steal: 290 * time.Millisecond, n: 60, want: 10 * time.Millisecond}, // (290+10) ms over 30
		{steal: 10 * time.Millisecond, n: 1, want: 40 * time.Millisecond},   // the rule, loose for one ping (it cannot lose more than all)
		{steal: 10 * time.Millisecond, n: 0, want: 0},                       // no round trip
	} {
		m := Idle{Steal: tt.steal, N: tt.n}
		if got := m.StealAllowance(); got != tt.want {
			t.Errorf("steal %v over %d pings: allowance %v, want %v", tt.steal, tt.n, got, tt.want)
		}
	}
}
