package hop_test

import (
	"testing"
	"time"

	"github.com/pi2hop/pi2hop/hop"
	"github.com/pi2hop/pi2hop/internal/roottest"
)

// Pings through a pair with 5 ms each way: the hop times each echo at
// its client-facing edge, from the request's arrival to the reply's
// departure toward the client (its server half), which holds both
// directions' 5 ms and the server's turnaround: the ping's own round trip
// but for the client's stack and TUN, well under the 0.3 ms by which
// the two must agree. A ping gives no client half (nothing the server
// sends is answered by the client), so no sum.
func TestPairPingRTT(t *testing.T) {
	roottest.Need(t)
	const delay = 5 * time.Millisecond
	p := newTestPair(t, hop.TestConfig(100_000_000, delay))
	medianPing(t, p, 3) // warm up: neighbours
	own := medianPing(t, p, 40)
	_, ft := p.Hop.StatsFlows(-1)
	var r *hop.FlowRTT
	for _, f := range ft[hop.Up].Flows {
		if f.Proto == "icmp" {
			r = f.RTT
		}
	}
	if r == nil {
		t.Fatalf("no RTT for the ping's flow in %+v", ft[hop.Up].Flows)
	}
	t.Logf("ping's own median %v; the hop's server half %+v", own, r.ServerHalf)
	half := time.Duration(r.ServerHalf.P50Ms * 1e6)
	if r.Method != "icmp-echo" || r.ServerHalf.N < 40 || r.ClientHalf.N != 0 || r.Sum.N != 0 {
		t.Errorf("RTT %+v, want icmp-echo, 40 or more server-half samples, no client half", r)
	}
	if d := own - half; half < 2*delay || d < -300*time.Microsecond || d > 300*time.Microsecond {
		t.Errorf("server half p50 %v, ping's own %v: want them within 0.3 ms, and at least the path's %v", half, own, 2*delay)
	}
	if ft[hop.Up].RTT == nil || ft[hop.Up].RTT.Samples < 40 {
		t.Errorf("RTT table counters %+v, want 40 samples or more", ft[hop.Up].RTT)
	}
}
