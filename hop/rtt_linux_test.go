package hop_test

import (
	"testing"
	"time"

	"github.com/pi2hop/pi2hop/hop"
	"github.com/pi2hop/pi2hop/internal/roottest"
)

// Pings through a pair with 5 ms each way: the hop times each echo from
// the request's arrival to the reply's (its server half, hop → server →
// hop), which holds the up direction's 5 ms and the server's turnaround;
// the ping's own round trip holds the down direction's 5 ms too. A ping
// gives no client half (nothing the server sends is answered by the
// client), so no sum.
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
	// The hop's half is the ping's round trip less the down direction's
	// delay and less the client's own stack and TUN hops (a fraction of a
	// ms, more on a loaded machine).
	half := time.Duration(r.ServerHalf.P50Ms * 1e6)
	if r.Method != "icmp-echo" || r.ServerHalf.N < 40 || r.ClientHalf.N != 0 || r.Sum.N != 0 {
		t.Errorf("RTT %+v, want icmp-echo, 40 or more server-half samples, no client half", r)
	}
	if half < delay || half > own-delay+100*time.Microsecond {
		t.Errorf("server half p50 %v, want between the up delay %v and the ping's %v less the down delay", half, delay, own)
	}
	if ft[hop.Up].RTT == nil || ft[hop.Up].RTT.Samples < 40 {
		t.Errorf("RTT table counters %+v, want 40 samples or more", ft[hop.Up].RTT)
	}
}
