package testbed

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"time"

	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/figure"
	"github.com/pi2hop/pi2hop/hop"
	"github.com/pi2hop/pi2hop/internal/procs"
	"github.com/pi2hop/pi2hop/pcap"
	"github.com/pi2hop/pi2hop/rtt"
	"github.com/pi2hop/pi2hop/testbed/report"
	"github.com/pi2hop/pi2hop/topology"
)

// appScenario names lab app in reports.
const appScenario = "app"

// RunApp runs cfg: every variant in turn (repetitions interleaved, as
// Run does), each in a fresh topology torn down before the next, and
// returns the report. A variant whose app fails is recorded as such and
// the lab goes on; when ctx is cancelled it stops at once.
func RunApp(ctx context.Context, cfg AppConfig, opt Options) (*report.Report, error) {
	cfg, err := cfg.Resolve()
	if err != nil {
		return nil, err
	}
	defer procs.AtLeast(labProcs)()
	prefix := opt.Prefix
	if prefix == "" {
		prefix = DefaultPrefix()
	}
	rep := &report.Report{Scenario: appScenario, Title: "Your app with and without L4S on the path", About: appAbout,
		Started: time.Now(), Config: cfg, Versions: report.CurrentVersions()}
	reps := make([][]report.Run, len(cfg.Variants))
	for r := range cfg.Repeat {
		for i, v := range cfg.Variants {
			name, title := v.Name, v.Name+": "+v.Title
			if cfg.Repeat > 1 {
				name = fmt.Sprintf("%s-%d", v.Name, r+1)
				title = fmt.Sprintf("%s (repetition %d/%d)", title, r+1, cfg.Repeat)
			}
			k := r*len(cfg.Variants) + i
			opt.Progress.Phase(fmt.Sprintf("run %d/%d: %s", k+1, cfg.Repeat*len(cfg.Variants), title), cfg.PlannedDuration()/time.Duration(cfg.Repeat*len(cfg.Variants)))
			var tap hop.Tap
			if opt.Capture != nil {
				tap = pcap.NewHopTap(opt.Capture, name+".")
			}
			run, err := runAppOnce(ctx, cfg, v, name, fmt.Sprintf("%s%c", prefix, 'a'+k%26), tap, opt)
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			run.Name, run.Title = v.Name, v.Name+": "+v.Title
			if err != nil {
				run.Error = err.Error()
			}
			reps[i] = append(reps[i], run)
		}
	}
	rep.Notes = appNotes(cfg)
	for i, v := range cfg.Variants {
		ok, excluded := completeRuns(reps[i])
		if len(excluded) > 0 {
			rep.Notes = append(rep.Notes, fmt.Sprintf("Variant %s: the app did not run to its end in repetition %s; "+
				"the figures are those of the others.", v.Name, strings.Join(excluded, ", ")))
		}
		run, err := report.Combine(ok)
		if err != nil {
			return nil, err
		}
		rep.Runs = append(rep.Runs, run)
	}
	rep.Findings = appFindings(rep)
	rep.Checks = appChecks(rep)
	for _, d := range Degradations(opt.CPULatency) {
		rep.Notes = append(rep.Notes, "Degraded: "+d.String()+".")
	}
	rep.ElapsedS = time.Since(rep.Started).Seconds()
	return rep, nil
}

// runAppOnce builds a topology for variant v, starts the server command,
// the cross traffic, and after the warm-up the client, and collects what
// the hop saw. Everything is torn down before it returns; a run that
// failed part way still reports what it measured.
func runAppOnce(ctx context.Context, cfg AppConfig, v AppVariant, name, prefix string, tap hop.Tap, opt Options) (report.Run, error) {
	sp := RunSpec{Name: name, Title: v.Title, Queue: v.Down.Queue, Buffer: v.Flags, RateBps: cfg.RateBps, RTT: cfg.RTT,
		Duration: cfg.Warmup + appSettle + cfg.Duration, Warmup: cfg.Warmup + appSettle, Seed: cfg.Seed}
	for i := range cfg.Cross {
		sp.Flows = append(sp.Flows, FlowSpec{Label: fmt.Sprintf("cross-%d", i+1), Kind: KindCubic, ECN: "classic"})
	}
	res := &runResult{spec: sp}
	app, tput, dist, err := appTraffic(ctx, cfg, v, name, prefix, tap, opt, res)
	run := analyse(res)
	run.App = app
	if app != nil {
		ecn := "classic"
		if app.Sent.L4SShare() >= 0.5 {
			ecn = "l4s"
		}
		run.Flows = append(run.Flows, report.Flow{Label: "app", Kind: "app", ECN: ecn, GoodputBps: app.UpBps + app.DownBps, RTTMs: app.RTTMs})
		run.Series.Throughput["app"] = tput
		if dist.N > 0 {
			run.RTTDist = map[string]figure.Dist{"app": dist}
		}
	}
	return run, err
}

// appTraffic runs one variant's topology and traffic into res and
// returns the app's figures (nil if it never started) and its
// throughput per second.
func appTraffic(ctx context.Context, cfg AppConfig, v AppVariant, name, prefix string, tap hop.Tap, opt Options, res *runResult) (app *report.App, tput []float64, dist figure.Dist, err error) {
	spec := topology.PairSpec{ClientNS: prefix + "c", ServerNS: prefix + "s", Tap: tap, Journal: opt.Journal}
	if cfg.NAT {
		if opt.Journal == nil || opt.HostSubnet == nil {
			return nil, nil, dist, errors.New("nat: needs the lab's journal and an allocated subnet")
		}
		spec.ServerNS, spec.ServerDev = "", prefix+"h"
		if spec.Subnet4, spec.Subnet6, err = opt.HostSubnet(); err != nil {
			return nil, nil, dist, fmt.Errorf("nat: %w", err)
		}
	}
	pair, err := topology.NewPairWith(ctx, spec,
		hop.Config{Name: name, Up: v.Up, Down: v.Down, Seed: cfg.Seed, CPULatency: opt.CPULatency, WakeProbe: true})
	if err != nil {
		return nil, nil, dist, fmt.Errorf("topology: %w", err)
	}
	if opt.OnHop != nil {
		opt.OnHop(pair.Hop)
		defer opt.OnHop(nil)
	}
	defer func() {
		if cerr := pair.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("teardown: %w", cerr)
		}
	}()
	if cfg.NAT {
		if err := appNAT(opt, prefix, spec); err != nil {
			return nil, nil, dist, fmt.Errorf("nat: %w", err)
		}
	}
	env := appEnv(pair, v.Name)
	var server *appCommand
	if cfg.Server != "" {
		if server, err = startAppCommand(pair.ServerNS, "server", cfg.Server, cfg.User, env); err != nil {
			return nil, nil, dist, err
		}
		defer server.stop(appStopGrace)
	}
	eps, err := openEndpoints(pair, res.spec)
	defer eps.close() // before pair.Close: sockets pin their namespace
	if err != nil {
		return nil, nil, dist, err
	}
	t0 := time.Now()
	cross := make(chan error, 1)
	crossCtx, stopCross := context.WithCancel(ctx)
	defer stopCross()
	go func() { cross <- eps.run(crossCtx, pair, res) }()
	poll := startAppPoll(pair, t0)
	client, err := runClient(ctx, cfg, pair, env, t0)
	// The variant ends with the client: the downloads stop then, and
	// every figure covers the time up to it.
	stopCross()
	tput = poll.stop()
	crossErr := <-cross
	if errors.Is(crossErr, context.Canceled) && ctx.Err() == nil {
		crossErr = nil
	}
	res.spec.Duration = min(res.spec.Duration, time.Since(t0))
	if server != nil {
		server.stop(appStopGrace)
	}
	_, tables := pair.Hop.StatsFlows(-1)
	a, up, down := appFigures(tables, isAppFlow(pair))
	a.RTTMs, a.ClientRTTMs, a.ServerRTTMs, a.RTTNote, dist = appRTT(pair.Hop.RTTFlows(isAppRTT(pair)))
	a.Client, a.Metrics = client.result()
	if server != nil {
		exit, ms := server.result()
		a.Server, a.Metrics = &exit, append(a.Metrics, ms...)
	}
	if runS := a.Client.RunS; runS > 0 {
		a.UpBps, a.DownBps = float64(up)*8/runS, float64(down)*8/runS
	}
	if err == nil && crossErr != nil {
		err = fmt.Errorf("cross traffic: %w", crossErr)
	}
	return &a, tput, dist, err
}

// appStopGrace is how long a command has to end after SIGTERM.
const appStopGrace = 2 * time.Second

// appNAT lets the client namespace reach whatever the host reaches,
// through an nftables table named after the run's namespaces' prefix
// (unique among instances).
func appNAT(opt Options, prefix string, spec topology.PairSpec) error {
	j := opt.Journal
	for _, k := range []string{"net/ipv4/ip_forward", "net/ipv6/conf/all/forwarding"} {
		if err := j.SetSysctl("", k, "1"); err != nil {
			return err
		}
	}
	return j.AddMasquerade("", "pi2hop-"+prefix, spec.Subnet4, spec.Subnet6)
}

// appEnv is what the app's commands find in their environment.
func appEnv(p *topology.Pair, variant string) []string {
	return []string{
		"PI2HOP_SERVER=" + p.ServerAddr.String(), "PI2HOP_SERVER6=" + p.ServerAddr6.String(),
		"PI2HOP_CLIENT=" + p.ClientAddr.String(), "PI2HOP_CLIENT6=" + p.ClientAddr6.String(),
		"PI2HOP_VARIANT=" + variant,
	}
}

// runClient waits out the warm-up, runs the client until it ends or
// cfg.Duration passes (then stops it) and returns it, ended.
func runClient(ctx context.Context, cfg AppConfig, pair *topology.Pair, env []string, t0 time.Time) (*appCommand, error) {
	select {
	case <-time.After(time.Until(t0.Add(cfg.Warmup + appSettle))):
	case <-ctx.Done():
		return notStarted("client", cfg.Client), ctx.Err()
	}
	c, err := startAppCommand(pair.ClientNS, "client", cfg.Client, cfg.User, env)
	if c == nil { // its pipes could not be made
		c = notStarted("client", cfg.Client)
	}
	if err != nil {
		return c, err
	}
	select {
	case <-c.done:
	case <-time.After(cfg.Duration):
		c.stop(appStopGrace)
	case <-ctx.Done():
		c.stop(appStopGrace)
	}
	return c, nil
}

// isAppFlow tells the app's flows from the cross traffic: everything the
// hop forwards is the lab's namespaces' (or, with NAT, the client's to
// anywhere), and the cross traffic is the TCP flows to or from the bulk
// listener's port on the server's address.
func isAppFlow(p *topology.Pair) func(hop.Flow) bool {
	cross := map[netip.AddrPort]bool{
		netip.AddrPortFrom(p.ServerAddr, basePort-1): true, netip.AddrPortFrom(p.ServerAddr6, basePort-1): true,
	}
	return func(f hop.Flow) bool {
		if f.Proto != "tcp" {
			return true
		}
		src, err1 := netip.ParseAddrPort(f.Src)
		dst, err2 := netip.ParseAddrPort(f.Dst)
		return err1 != nil || err2 != nil || !(cross[src] || cross[dst])
	}
}

// notStarted is a command that never ran, as its result reports it.
func notStarted(role, line string) *appCommand {
	c := &appCommand{role: role, done: make(chan struct{}), metrics: newMetricLines(), stderr: newTailLines(0)}
	c.exit = report.AppExit{Command: line, Code: -1, Failed: true}
	close(c.done)
	return c
}

// isAppRTT tells the app's flows from the cross traffic in the hop's RTT
// table, as isAppFlow does in its flow table.
func isAppRTT(p *topology.Pair) func(*rtt.Flow) bool {
	return func(f *rtt.Flow) bool {
		return f.Proto != 6 || f.Server.Port() != basePort-1 || f.Server.Addr() != p.ServerAddr && f.Server.Addr() != p.ServerAddr6
	}
}

// appFigures sums the app's flows of both directions' tables, with the
// bytes the hop delivered each way.
func appFigures(tables [2]hop.FlowTable, isApp func(hop.Flow) bool) (a report.App, up, down uint64) {
	for d, t := range tables {
		for _, f := range t.Flows {
			if !isApp(f) {
				continue
			}
			a.Flows++
			addECN(&a.Sent, f.In)
			addECN(&a.Received, f.Out)
			a.Marks += f.Marks
			for _, n := range f.Drops {
				a.Drops += n
			}
			if hop.Dir(d) == hop.Up {
				addECN(&a.ClientSent, f.In)
				up += f.Out.Total().Bytes
			} else {
				down += f.Out.Total().Bytes
			}
			if f.Class == hop.ClassChanged && f.Codepoint == "ECT(1)" && f.ChangedTo != "ECT(1)" {
				a.FellBack++
			}
		}
	}
	return a, up, down
}

func addECN(e *report.ECNPackets, c aqm.ByECN) {
	e.NotECT += c.NotECT.Packets
	e.ECT1 += c.ECT1.Packets
	e.ECT0 += c.ECT0.Packets
	e.CE += c.CE.Packets
}

// appPoll samples the app's delivered bytes (both directions) once a
// second from the traffic's start, for the throughput plot.
type appPoll struct {
	done    chan struct{}
	stopped chan []float64
}

func startAppPoll(pair *topology.Pair, t0 time.Time) *appPoll {
	p := &appPoll{done: make(chan struct{}), stopped: make(chan []float64, 1)}
	isApp := isAppFlow(pair)
	go func() {
		var bps []float64
		var prev float64
		for k := 1; ; k++ {
			select {
			case <-p.done:
				p.stopped <- bps
				return
			case <-time.After(time.Until(t0.Add(time.Duration(k) * time.Second))):
			}
			_, t := pair.Hop.StatsFlows(-1)
			var sum float64
			for _, d := range t {
				for _, f := range d.Flows {
					if isApp(f) {
						sum += float64(f.Out.Total().Bytes)
					}
				}
			}
			// A flow evicted from the table takes its bytes along: never
			// a negative rate.
			bps = append(bps, max(sum-prev, 0)*8)
			prev = sum
		}
	}()
	return p
}

func (p *appPoll) stop() []float64 {
	close(p.done)
	return <-p.stopped
}
