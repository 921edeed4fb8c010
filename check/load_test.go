package check

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"
)

// Over loopback nothing queues: the load reaches its cap with no queue
// and no CE, so the verdict is not saturated and the path not ready; the
// flows never send more than the cap.
func TestLoopbackLoadNotSaturated(t *testing.T) {
	peer := serve(t, "127.0.0.1:0")
	opts := DefaultOptions()
	opts.Target, opts.Probes, opts.Interval = peer.String(), 2, time.Millisecond
	opts.LoadDuration, opts.MaxRate = 2*time.Second, 10_000_000
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	start := time.Now()
	r, err := Path(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el > 6*time.Second {
		t.Errorf("a 2 s load took %v in all", el)
	}
	l := r.Load
	if l == nil {
		t.Fatal("no load result")
	}
	f := l.Figures
	t.Logf("%s; goodput %.2f + %.2f Mbit/s, probes %d + %d", l.Verdict.Headline(), f.L4SGoodput/1e6, f.CGoodput/1e6, f.L4SProbes, f.ClassicProbes)
	if l.Verdict.Kind != NotSaturated || r.Ready() {
		t.Errorf("verdict %q, ready %v; want %q, not ready", l.Verdict.Headline(), r.Ready(), NotSaturated)
	}
	// The responder counted the flows' packets, all as sent: loopback
	// changes nothing.
	if !f.ArrivedKnown || f.Arrived[0][1] == 0 || f.Arrived[1][0] == 0 || len(l.Verdict.PathFaults) != 0 {
		t.Errorf("load report %v (known %v), path faults %q: want every packet as sent", f.Arrived, f.ArrivedKnown, l.Verdict.PathFaults)
	}
	if f.Arrived[0][0]+f.Arrived[0][2]+f.Arrived[0][3]+f.Arrived[1][1]+f.Arrived[1][2]+f.Arrived[1][3] != 0 {
		t.Errorf("load report %v: packets changed on loopback", f.Arrived)
	}
	// The flows' payload stays under their share of the cap: headers
	// and the probes take the rest. The floors only say the flows and
	// the probes ran: a loaded machine runs them late.
	if g := f.L4SGoodput + f.CGoodput; g > float64(2*flowCap(opts.MaxRate)) || g < 0.25*float64(2*flowCap(opts.MaxRate)) {
		t.Errorf("goodput %.0f bit/s, want at most the flows' cap %d and at least a quarter of it", g, 2*flowCap(opts.MaxRate))
	}
	// Two seconds, a third of them warm-up, a probe every 10 ms each:
	// about 133, fewer when the probes' goroutines wake late.
	if f.L4SProbes < 30 || f.ClassicProbes < 30 || f.L4SProbes > 134 || f.ClassicProbes > 134 {
		t.Errorf("%d and %d round trips after the warm-up, want 30 to 134 each", f.L4SProbes, f.ClassicProbes)
	}
}

// The cap is what its name says: the flows' payload plus headers plus
// the probes add up to the cap less its margin.
func TestFlowCap(t *testing.T) {
	for _, capBPS := range []uint64{MinMaxRate, 10_000_000, DefaultMaxRate} {
		c := flowCap(capBPS)
		probes := 2 * (ProbeSize + loadOverhead) * 8 * 100 // bit/s: a probe per 10 ms per codepoint
		onWire := 2 * float64(c) * (loadMTU + loadOverhead) / loadMTU
		if total := onWire + float64(probes); total > capMargin*float64(capBPS) || total < (capMargin-0.01)*float64(capBPS) {
			t.Errorf("cap %d: flows %d bit/s each make %.0f bit/s with headers and probes", capBPS, c, total)
		}
		if c < 100_000 {
			t.Errorf("cap %d: flow cap %d under the sender's 100 kbit/s floor", capBPS, c)
		}
	}
}

// Cancelling (Ctrl-C) stops the load at once.
func TestLoadStopsOnCancel(t *testing.T) {
	peer := serve(t, "127.0.0.1:0")
	opts := DefaultOptions()
	opts.Target, opts.Probes, opts.Interval = peer.String(), 2, time.Millisecond
	opts.LoadDuration, opts.MaxRate = 30*time.Second, 5_000_000
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(time.Second, cancel)
	start := time.Now()
	_, err := Path(ctx, opts)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Path cancelled during the load: %v, want context.Canceled", err)
	}
	if el := time.Since(start); el > 1500*time.Millisecond {
		t.Errorf("Path returned %v after the start, cancelled at 1 s: want within 0.5 s of it", el)
	}
}

// The responder sinks at most maxLoads loads at once, answers a repeated
// request with the same ports, and frees a load's sinks when it ends.
func TestResponderLoadLimit(t *testing.T) {
	peer := serve(t, "127.0.0.1:0")
	c, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(peer))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ask := func(session uint32, d time.Duration) [3]uint16 {
		t.Helper()
		if _, err := c.Write(appendMsg(nil, msg{typ: typeLoad, session: session, loadMs: uint32(d.Milliseconds())})); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 256)
		c.SetReadDeadline(time.Now().Add(2 * time.Second))
		n, err := c.Read(buf)
		if err != nil {
			t.Fatalf("session %d: no load answer within 2 s: %v", session, err)
		}
		m, err := parseMsg(buf[:n])
		if err != nil || m.typ != typeLoadAck || m.session != session || m.loadMs != uint32(d.Milliseconds()) {
			t.Fatalf("session %d: answer %+v, %v", session, m, err)
		}
		return m.ports
	}
	var first [3]uint16
	for s := uint32(1); s <= maxLoads; s++ {
		p := ask(s, 300*time.Millisecond)
		if p[0] == 0 || p[1] == 0 || p[2] == 0 || p[0] == p[1] || p[1] == p[2] {
			t.Errorf("session %d: ports %v, want three distinct", s, p)
		}
		if s == 1 {
			first = p
		}
	}
	if p := ask(1, 300*time.Millisecond); p != first {
		t.Errorf("session 1 asked again: ports %v, want its own %v", p, first)
	}
	if p := ask(maxLoads+1, 300*time.Millisecond); p != [3]uint16{} {
		t.Errorf("a load beyond %d: ports %v, want none (busy)", maxLoads, p)
	}
	deadline := time.Now().Add(3 * time.Second)
	for ask(maxLoads+2, 300*time.Millisecond) == [3]uint16{} {
		if time.Now().After(deadline) {
			t.Fatal("no load taken 3 s after the first four ended (300 ms each)")
		}
		time.Sleep(50 * time.Millisecond)
	}
}
