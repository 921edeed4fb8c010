package check

import (
	"context"
	"fmt"
	"math"
	"net"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/figure"
	"github.com/pi2hop/pi2hop/flow"
)

// The load test's limits and settings.
const (
	// DefaultLoadDuration is how long the load runs unless told.
	DefaultLoadDuration = 5 * time.Second
	// DefaultMaxRate caps the load unless told, bit/s: enough to saturate
	// the access links L4S testers meet, little enough not to hurt a
	// shared path for the seconds the test runs.
	DefaultMaxRate = 100_000_000
	// MinMaxRate is the lowest cap: each flow needs its 100 kbit/s floor
	// beside the probes.
	MinMaxRate = 1_000_000
	// MaxLoadDuration bounds a load, at the client and at the responder.
	MaxLoadDuration = time.Minute
	// probeEvery is the RTT probes' period in each codepoint.
	probeEvery = 10 * time.Millisecond
	// loadMTU is the flows' UDP payload, below any path MTU of 1500 with
	// IPv6 and a tunnel header or two.
	loadMTU = 1400
	// loadOverhead is the IP and UDP header bytes of a packet at most
	// (IPv6): the cap counts whole IP packets, as a link does.
	loadOverhead = 48
	// loadGrace is how long the responder keeps a load's sinks open past
	// its duration: the client's flows start after the answer arrives.
	loadGrace = 3 * time.Second
	// maxLoads is how many loads a responder sinks at once.
	maxLoads = 4
)

// Load is the outcome of the load test.
type Load struct {
	Duration time.Duration
	MaxRate  uint64 // bit/s
	Figures  LoadFigures
	Verdict  Bottleneck
}

// capMargin is the share of the cap the load aims at: Prague paces in
// bursts against its own clock, so a second of it can run a little over
// its rate, and the cap holds for every second.
const capMargin = 0.97

// flowCap is each flow's payload rate cap, bit/s: what is left of the cap
// after the probes, within the margin, halved, less the headers.
func flowCap(maxRate uint64) uint64 {
	probes := 2 * float64(ProbeSize+loadOverhead) * 8 * float64(time.Second/probeEvery)
	left := (capMargin*float64(maxRate) - probes) / 2
	return uint64(left * loadMTU / (loadMTU + loadOverhead))
}

// askLoad asks the responder to sink a load of d and returns its ports.
func (c *client) askLoad(ctx context.Context, d time.Duration) ([3]uint16, error) {
	err := c.ask(ctx, msg{typ: typeLoad, session: c.session, loadMs: uint32(d.Milliseconds())}, c.loadAck, 250*time.Millisecond, 8)
	if err != nil {
		return [3]uint16{}, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ports, nil
}

// runLoad saturates the path from the client for opts.LoadDuration: an
// L4S flow (Prague, ECT(1)) and a classic one (the same congestion control
// Not-ECT, answering loss only) at once, each under half the cap, and an
// RTT probe in each codepoint; then classifies the bottleneck.
func (c *client) runLoad(ctx context.Context, opts Options) (*Load, error) {
	l := &Load{Duration: opts.LoadDuration, MaxRate: opts.MaxRate}
	l.Figures.MaxRate = float64(opts.MaxRate)
	ports, err := c.askLoad(ctx, opts.LoadDuration+loadGrace)
	switch {
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case err != nil:
		l.Verdict = Bottleneck{Kind: NotMeasured, Detail: "the responder did not answer the load request (a pi2hop without the load test?)"}
		return l, nil
	case ports == [3]uint16{}:
		l.Verdict = Bottleneck{Kind: NotMeasured, Detail: "the responder is busy with other loads: try again later"}
		return l, nil
	}
	at := func(i int) netip.AddrPort { return netip.AddrPortFrom(c.peer.Addr(), ports[i]) }
	var conns [4]*net.UDPConn
	defer func() {
		for _, cn := range conns {
			if cn != nil {
				cn.Close()
			}
		}
	}()
	for i := range conns {
		cn, _, err := flow.DialUDP(at(0).String(), "")
		if err != nil {
			return nil, err
		}
		conns[i] = cn
	}
	fcap := flowCap(opts.MaxRate)
	cfg := func(ecn string) flow.PragueConfig {
		// Validation off: the test measures how the bottleneck treats
		// ECT(1) whatever the path does to it; the transitions above say
		// what it does.
		return flow.PragueConfig{ECN: ecn, MaxRate: fcap, MTU: loadMTU, Duration: opts.LoadDuration, NoECNValidation: true}
	}
	var (
		wg         sync.WaitGroup
		sl, sc     flow.SenderSummary
		pl, pc     flow.ProbeSummary
		errs       [4]error
		ctxL, stop = context.WithCancel(ctx)
	)
	defer stop()
	for i, f := range []func() error{
		func() (err error) { sl, err = flow.PragueSend(ctxL, conns[0], at(0), cfg(flow.ECNL4S), nil); return },
		func() (err error) {
			sc, err = flow.PragueSend(ctxL, conns[1], at(1), cfg(flow.ECNClassic), nil)
			return
		},
		func() (err error) {
			pl, err = flow.Probe(ctxL, conns[2], at(2), aqm.ECT1, probeEvery, opts.LoadDuration, nil)
			return
		},
		func() (err error) {
			pc, err = flow.Probe(ctxL, conns[3], at(2), aqm.NotECT, probeEvery, opts.LoadDuration, nil)
			return
		},
	} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if errs[i] = f(); errs[i] != nil {
				stop() // one part failing ends the others
			}
		}()
	}
	wg.Wait()
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	for _, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("load: %w", err)
		}
	}
	l.Figures = figures(opts, sl, sc, pl, pc)
	l.Figures.Arrived, l.Figures.ArrivedKnown = c.loadReport(ctx)
	l.Verdict = CrossCheck(Classify(l.Figures), l.Figures)
	return l, nil
}

// loadReport asks the responder what the load's flows arrived as; false
// when it does not say (a responder without the count).
func (c *client) loadReport(ctx context.Context) ([2][4]int, bool) {
	var a [2][4]int
	if c.ask(ctx, msg{typ: typeLoadReportReq, session: c.session}, c.gotRep, 250*time.Millisecond, 12) != nil {
		return a, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for f := range a {
		for cp := range a[f] {
			a[f][cp] = int(c.report[f][cp])
		}
	}
	return a, true
}

// figures reads the flows' and probes' summaries into the classification's
// input. Round trips of the first third of the run, a second at most, are
// left out: the flows are still ramping up.
func figures(opts Options, sl, sc flow.SenderSummary, pl, pc flow.ProbeSummary) LoadFigures {
	warm := min(opts.LoadDuration/3, time.Second)
	f := LoadFigures{MaxRate: float64(opts.MaxRate),
		L4SCE: sl.CEFraction, L4SLoss: sl.LossFraction, ClassicLoss: sc.LossFraction,
		L4SGoodput: sl.GoodputBps, CGoodput: sc.GoodputBps,
		ProbesThere: [2][4]int{pl.Forward, pc.Forward}, ProbesBack: [2][4]int{pl.Return, pc.Return}}
	for _, p := range []flow.ProbeSummary{pl, pc} {
		for _, r := range p.RTT {
			if f.Base == 0 || r < f.Base {
				f.Base = r
			}
		}
	}
	after := func(p flow.ProbeSummary) []time.Duration {
		var s []time.Duration
		for i, r := range p.RTT {
			if p.RTTAt[i] >= warm {
				s = append(s, r)
			}
		}
		slices.Sort(s)
		return s
	}
	if s := after(pl); len(s) > 0 {
		f.L4SProbes, f.L4SP50, f.L4SP99 = len(s), figure.Quantile(s, 0.5), figure.Quantile(s, 0.99)
	}
	if s := after(pc); len(s) > 0 {
		f.ClassicProbes, f.ClassicP50, f.ClassicP99 = len(s), figure.Quantile(s, 0.5), figure.Quantile(s, 0.99)
	}
	return f
}

// responderLoad is one load a responder sinks.
type responderLoad struct {
	ports  [3]uint16
	cancel context.CancelFunc // stops the sinks
}

// loadReport returns what key's load's flows arrived as, once its sinks
// have stopped; while they run it stops them (the client asks when its
// load is over) and reports false, and the client asks again.
func (r *Responder) loadReport(key sessionKey) ([2][4]uint32, bool) {
	r.loadMu.Lock()
	defer r.loadMu.Unlock()
	if l := r.loads[key]; l != nil {
		l.cancel()
		return [2][4]uint32{}, false
	}
	a, ok := r.finished[key]
	return a, ok
}

// arrivals counts a sink's data packets by codepoint, saturating.
func arrivals(s flow.ReceiverSummary) [4]uint32 {
	var a [4]uint32
	for c, n := range map[aqm.ECN]int64{aqm.NotECT: s.NotECT, aqm.ECT1: s.ECT1, aqm.ECT0: s.ECT0, aqm.CE: s.CE} {
		a[c] = uint32(min(max(n, 0), math.MaxUint32))
	}
	return a
}

// startLoad opens the sinks of a load of d for key, or returns those of
// the one it already runs (the request was repeated); zero ports when it
// runs maxLoads already or cannot open sockets.
func (r *Responder) startLoad(key sessionKey, d time.Duration) [3]uint16 {
	r.loadMu.Lock()
	defer r.loadMu.Unlock()
	if l := r.loads[key]; l != nil {
		return l.ports
	}
	if len(r.loads) >= maxLoads || r.ctx == nil {
		return [3]uint16{}
	}
	d = min(d, MaxLoadDuration+loadGrace)
	local := r.conn.LocalAddr().(*net.UDPAddr)
	var conns [3]*net.UDPConn
	l := &responderLoad{}
	for i := range conns {
		c, err := net.ListenUDP("udp", &net.UDPAddr{IP: local.IP, Zone: local.Zone})
		if err != nil {
			for _, c := range conns[:i] {
				c.Close()
			}
			return [3]uint16{}
		}
		conns[i] = c
		l.ports[i] = uint16(c.LocalAddr().(*net.UDPAddr).Port)
	}
	r.loads[key] = l
	ctx, cancel := context.WithTimeout(r.ctx, d)
	l.cancel = cancel
	var (
		wg      sync.WaitGroup
		arrived [2][4]uint32 // each sink writes its own row
	)
	for i, f := range []func(){
		func() {
			s, _ := flow.PragueRecv(ctx, conns[0], flow.PragueConfig{ECN: flow.ECNL4S, MTU: loadMTU}, nil)
			arrived[0] = arrivals(s)
		},
		func() {
			s, _ := flow.PragueRecv(ctx, conns[1], flow.PragueConfig{ECN: flow.ECNClassic, MTU: loadMTU}, nil)
			arrived[1] = arrivals(s)
		},
		func() { flow.ProbeServe(ctx, conns[2]) },
	} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer conns[i].Close()
			f()
		}()
	}
	r.loadWG.Add(1)
	go func() {
		defer r.loadWG.Done()
		wg.Wait()
		cancel()
		r.loadMu.Lock()
		delete(r.loads, key)
		if len(r.finished) >= maxSessions {
			clear(r.finished) // reports are asked for at once; old ones go
		}
		r.finished[key] = arrived
		r.loadMu.Unlock()
	}()
	return l.ports
}
