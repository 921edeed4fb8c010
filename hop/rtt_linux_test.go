package hop_test

import (
	"os/exec"
	"runtime"
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
// sends is answered by the client), so no sum. The CPUs are kept awake
// (awakeCPUs) as the hop asks them to be.
func TestPairPingRTT(t *testing.T) {
	roottest.Need(t, "chrt", "sh")
	const delay = 5 * time.Millisecond
	p := newTestPair(t, hop.TestConfig(100_000_000, delay))
	awakeCPUs(t)
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

// awakeCPUs keeps every CPU busy at SCHED_IDLE until t ends, one shell
// loop under `chrt --idle 0` per CPU. The hop asks the kernel to keep idle
// CPUs from halting (Config.CPULatency), but a VM without a cpuidle driver
// halts them whatever PM QoS asks, and its host may then wake a CPU late:
// on the owner's wake-up for the request, outside the hop's edges, that
// lateness is in ping's own round trip and not in the hop's
// (docs/performance.md has a quarter hour of it). A task at SCHED_IDLE
// gives way to any other as soon as it wakes, so the loops stand in for
// the request and take no time from the hop, the client or the server.
func awakeCPUs(t *testing.T) {
	t.Helper()
	for range runtime.NumCPU() {
		c := exec.Command("chrt", "--idle", "0", "sh", "-c", "while :; do :; done")
		if err := c.Start(); err != nil {
			t.Fatalf("chrt --idle 0 sh: %v", err)
		}
		t.Cleanup(func() {
			c.Process.Kill()
			c.Wait()
		})
	}
}
