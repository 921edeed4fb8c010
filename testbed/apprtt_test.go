package testbed

import (
	"math"
	"strings"
	"testing"

	"github.com/pi2hop/pi2hop/rtt"
)

// flowWith is a flow whose halves took the samples given, in ms.
func flowWith(client, server []float64) rtt.Flow {
	var h [2]rtt.Hist
	for _, ms := range client {
		h[rtt.ClientHalf].Add(int64(ms * 1e6))
	}
	for _, ms := range server {
		h[rtt.ServerHalf].Add(int64(ms * 1e6))
	}
	return rtt.Flow{Status: rtt.StatusMeasured, Hists: &h}
}

func TestAppRTT(t *testing.T) {
	near := func(got, want float64) bool { return math.Abs(got-want) <= 0.008*want } // half a bucket
	// Two flows: client halves 1, 2 | 3 ms, server halves 20, 21 | 22, 40 ms.
	// Together: client 1,2,3 (p50 2), server 20,21,22,40 (p50 21, p99 40);
	// their sum quantile by quantile: p50 23, p99 43, max 3+40.
	sum, c, s, note, dist := appRTT([]rtt.Flow{flowWith([]float64{1, 2}, []float64{20, 21}), flowWith([]float64{3}, []float64{22, 40})})
	if sum == nil || c == nil || s == nil || note != "" {
		t.Fatalf("sum %v, client %v, server %v, note %q", sum, c, s, note)
	}
	if c.N != 3 || s.N != 4 || sum.N != 3 || !near(c.P50, 2) || !near(s.P50, 21) || !near(s.P99, 40) ||
		!near(sum.P50, 23) || !near(sum.P99, 43) || !near(sum.Max, 43) {
		t.Errorf("client %+v\nserver %+v\nsum %+v", *c, *s, *sum)
	}
	if dist.N != 3 || len(dist.X) == 0 || !near(dist.X[len(dist.X)-1], 43) {
		t.Errorf("distribution %+v, want 3 samples up to 43 ms", dist)
	}
	// ping: only the server half (its replies are answered by nothing).
	sum, c, s, note, _ = appRTT([]rtt.Flow{flowWith(nil, []float64{20, 22})})
	if c != nil || s == nil || sum != s || !strings.Contains(note, "only the server half") {
		t.Errorf("server half only: sum %v, client %v, note %q", sum, c, note)
	}
	// QUIC without the spin bit, and nothing timed at all.
	if sum, _, _, note, _ = appRTT([]rtt.Flow{{Status: rtt.StatusNoSpin}}); sum != nil || note != "no RTT: encrypted, no spin bit" {
		t.Errorf("no spin: %v, %q", sum, note)
	}
	if sum, _, _, note, _ = appRTT(nil); sum != nil || !strings.Contains(note, "no round-trip samples") {
		t.Errorf("nothing: %v, %q", sum, note)
	}
}
