package testbed

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"time"

	"github.com/pi2hop/pi2hop/figure"
	"github.com/pi2hop/pi2hop/hop"
	"github.com/pi2hop/pi2hop/internal/procs"
	"github.com/pi2hop/pi2hop/netsys"
	"github.com/pi2hop/pi2hop/pcap"
	"github.com/pi2hop/pi2hop/shaper"
	"github.com/pi2hop/pi2hop/testbed/metrics"
	"github.com/pi2hop/pi2hop/testbed/report"
	"github.com/pi2hop/pi2hop/topology"
)

// Options steer a lab beyond its Config.
type Options struct {
	Progress *Progress // nil: no progress display
	// Prefix starts the names of every namespace and device the lab makes
	// ("" = "p2l" and the process id), so concurrent labs never collide.
	Prefix string
	// Capture, if not nil, records every run's hop taps in one file,
	// each run's named after it ("l4s.up-in", "classic.up-out", ...:
	// RunSpec.Name and a dot), so analyze reports the runs apart.
	Capture *pcap.Capture
	// CPULatency is each run's hop.Config.CPULatency: 0 keeps idle CPUs
	// polling while the hop runs, negative makes no request.
	CPULatency time.Duration
	// Journal, if not nil, records each run's namespaces and devices (a
	// named instance's, saved to its state file, so a cleanup removes
	// what a killed lab left); each run's teardown undoes it.
	Journal *netsys.Journal
	// OnHop, if not nil, is told each run's hop once it forwards, and nil
	// once it is torn down: a live view follows the runs (pi2hop lab --web).
	OnHop func(*hop.Hop)
	// HostSubnet, if not nil, gives lab app with NAT the subnets of its
	// client namespace and host-side device (instance.Env.HostSubnet:
	// allocated among instances).
	HostSubnet func() (netip.Prefix, netip.Prefix, error)
}

// DefaultPrefix is the start of the names of this process's lab
// namespaces: "p2l" and the process id (mod 10000), followed by a letter
// per run and "c" or "s"; always within Linux's 15-character limit.
func DefaultPrefix() string { return fmt.Sprintf("p2l%d", os.Getpid()%10000) }

// setupAllowance is what building and tearing down one run's topology
// adds to its traffic time, for the progress estimate.
const setupAllowance = time.Second

// PlannedDuration estimates how long a resolved Config takes.
func (c Config) PlannedDuration() time.Duration {
	var d time.Duration
	for _, r := range c.Runs() {
		d += r.Duration + setupAllowance
	}
	return d * time.Duration(max(c.Repeat, 1))
}

// Run runs every run of cfg's scenario, each in a fresh topology torn
// down before the next, and returns the report (not yet written out). A
// run that fails is recorded in the report and the lab goes on; when ctx
// is cancelled the lab stops at once, tears everything down and returns
// ctx's error.
func Run(ctx context.Context, cfg Config, opt Options) (*report.Report, error) {
	cfg, err := cfg.Resolve()
	if err != nil {
		return nil, err
	}
	sc := scenarios[cfg.Scenario]
	defer procs.AtLeast(labProcs)()
	prefix := opt.Prefix
	if prefix == "" {
		prefix = DefaultPrefix()
	}
	rep := &report.Report{Scenario: cfg.Scenario, Title: sc.title, About: sc.doc, Started: time.Now(), Quick: cfg.Quick,
		Config: cfg, Versions: report.CurrentVersions()}
	runs := cfg.Runs()
	// Repetitions interleave (a b c, a b c), so a slow spell of the
	// machine spreads over the runs instead of sinking one.
	reps := make([][]report.Run, len(runs))
	for r := range cfg.Repeat {
		for i, sp := range runs {
			title, name := sp.Title, sp.Name+"."
			if cfg.Repeat > 1 {
				title = fmt.Sprintf("%s (repetition %d/%d)", sp.Title, r+1, cfg.Repeat)
				name = fmt.Sprintf("%s-%d.", sp.Name, r+1)
			}
			k := r*len(runs) + i
			opt.Progress.Phase(fmt.Sprintf("run %d/%d: %s", k+1, cfg.Repeat*len(runs), title), sp.Duration+setupAllowance)
			var tap hop.Tap
			if opt.Capture != nil {
				tap = pcap.NewHopTap(opt.Capture, name)
			}
			res, err := runOne(ctx, sp, fmt.Sprintf("%s%c", prefix, 'a'+k%26), tap, opt.CPULatency, opt.Journal, opt.OnHop)
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			run := analyse(res)
			if err != nil {
				run.Error = err.Error()
			}
			reps[i] = append(reps[i], run)
		}
	}
	for i := range runs {
		run, err := report.Combine(reps[i])
		if err != nil {
			return nil, err
		}
		rep.Runs = append(rep.Runs, run)
	}
	finish(rep, cfg)
	for _, d := range Degradations(opt.CPULatency) {
		rep.Notes = append(rep.Notes, "Degraded: "+d.String()+".")
	}
	rep.ElapsedS = time.Since(rep.Started).Seconds()
	return rep, nil
}

// finish adds what is computed across runs: the BDP table, the comparison
// with Apple's figures, the checks and the notes.
func finish(rep *report.Report, cfg Config) {
	runs := cfg.Runs()
	for i := range rep.Runs {
		sp := runs[i]
		if cfg.Scenario != "bdp" || len(sp.Flows) != 1 {
			continue
		}
		w := sp.Flows[0].Window
		pred := metrics.WindowLimit(w, sp.RTT, float64(sp.RateBps))
		meas := 0.0
		if len(rep.Runs[i].Flows) > 0 {
			meas = rep.Runs[i].Flows[0].GoodputBps
		}
		rep.BDP = append(rep.BDP, report.BDPRow{DistanceKm: sp.DistanceKm, RTTMs: figure.Ms(sp.RTT), WindowBytes: w,
			LinkBps: float64(sp.RateBps), PredictedBps: pred, MeasuredBps: meas, RelErr: metrics.RelErr(meas, pred), Run: sp.Name})
	}
	if cfg.Scenario == "l4s-demo" {
		rep.Comparison = appleComparison(rep)
	}
	rep.Checks = checks(rep)
	rep.Notes = notes(cfg)
}

// Degradations is what the lab's hops fall back on in this process (see
// hop.Degradations), for its start-up line and report.
func Degradations(cpuLatency time.Duration) []hop.Degradation {
	c := hop.Config{CPULatency: cpuLatency}
	c.Priority = hop.DefaultPriority // the priority the runs' hops take by default
	return hop.Degradations(c)
}

// runOne builds a topology for sp, runs its flows and collects what they
// and the hop saw. The topology is torn down before it returns, whatever
// happens; the result is usable (possibly partial) even with an error.
func runOne(ctx context.Context, sp RunSpec, prefix string, tap hop.Tap, cpuLatency time.Duration, j *netsys.Journal, onHop func(*hop.Hop)) (res *runResult, err error) {
	res = &runResult{spec: sp}
	dir := hop.DirConfig{
		Link:  shaper.Config{Rate: shaper.Const{BitsPerSecond: sp.RateBps}, Delay: int64(sp.RTT / 2), Aggregate: sp.Aggregate},
		Queue: sp.Queue,
	}
	if sp.ECNFault != "" {
		if dir.Link.Fault, err = shaper.ParseFault(sp.ECNFault); err != nil {
			return res, fmt.Errorf("ecn fault: %w", err)
		}
	}
	pair, err := topology.NewPairWith(ctx, topology.PairSpec{ClientNS: prefix + "c", ServerNS: prefix + "s", Tap: tap, Journal: j},
		hop.Config{Name: sp.Name, Up: dir, Down: dir, Seed: sp.Seed, CPULatency: cpuLatency, WakeProbe: true})
	if err != nil {
		return res, fmt.Errorf("topology: %w", err)
	}
	if onHop != nil {
		onHop(pair.Hop)
		defer onHop(nil)
	}
	defer func() {
		if cerr := pair.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("teardown: %w", cerr)
		}
	}()
	for _, ns := range []string{pair.ClientNS, pair.ServerNS} {
		// Classic load is Not-ECT: no ECN negotiation from either end,
		// unless the run asks for classic ECN (RFC 3168) TCP.
		ecn := "0"
		if sp.TCPECN {
			ecn = "1"
		}
		if err := netsys.WriteSysctl(ns, "net/ipv4/tcp_ecn", ecn); err != nil {
			return res, err
		}
	}
	eps, err := openEndpoints(pair, sp)
	defer eps.close() // before pair.Close: sockets pin their namespace
	if err != nil {
		return res, err
	}
	return res, eps.run(ctx, pair, res)
}
