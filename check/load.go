package check

import (
	"context"
	"fmt"
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
		l.Verdict = Bottleneck{NotMeasured, "the responder did not answer the load request (a pi2hop without the load test?)"}
		return l, nil
	case ports == [3]uint16{}:
		l.Verdict = Bottleneck{NotMeasured, "the responder is busy with other loads: try again later"}
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
	l.Verdict = Classify(l.Figures)
	return l, nil
}

// figures reads the flows' and probes' summaries into the classification's
// input. Round trips of the first third of the run, a second at most, are
// left out: the flows are still ramping up.
func figures(opts Options, sl, sc flow.SenderSummary, pl, pc flow.ProbeSummary) LoadFigures {
	warm := min(opts.LoadDuration/3, time.Second)
	f := LoadFigures{MaxRate: float64(opts.MaxRate),
		L4SCE: sl.CEFraction, L4SLoss: sl.LossFraction, ClassicLoss: sc.LossFraction,
		L4SGoodput: sl.GoodputBps, CGoodput: sc.GoodputBps}
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
	ports [3]uint16
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
	var wg sync.WaitGroup
	for i, f := range []func(){
		func() { flow.PragueRecv(ctx, conns[0], flow.PragueConfig{ECN: flow.ECNL4S, MTU: loadMTU}, nil) },
		func() { flow.PragueRecv(ctx, conns[1], flow.PragueConfig{ECN: flow.ECNClassic, MTU: loadMTU}, nil) },
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
		r.loadMu.Unlock()
	}()
	return l.ports
}
