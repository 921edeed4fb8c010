package testbed

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"sync"
	"time"

	"github.com/pi2hop/pi2hop/hop"
	"github.com/pi2hop/pi2hop/shaper"
	"github.com/pi2hop/pi2hop/testbed/flow"
	"github.com/pi2hop/pi2hop/testbed/metrics"
	"github.com/pi2hop/pi2hop/testbed/report"
	"github.com/pi2hop/pi2hop/tun"
)

// Options steer a lab beyond its Config.
type Options struct {
	Progress *Progress // nil: no progress display
	// Prefix starts the names of every namespace and device the lab makes
	// ("" = "p2l" and the process id), so concurrent labs never collide.
	Prefix string
	// KeepPriority leaves the process's scheduling priority alone; by
	// default the lab raises it (see labNice). GOMAXPROCS is raised
	// either way (see labProcs).
	KeepPriority bool
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
	return d
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
	if !opt.KeepPriority {
		defer raisePriority()()
	}
	defer raiseProcs()()
	prefix := opt.Prefix
	if prefix == "" {
		prefix = DefaultPrefix()
	}
	rep := &report.Report{Scenario: cfg.Scenario, Title: sc.title, About: sc.doc, Started: time.Now(), Quick: cfg.Quick,
		Config: cfg, Versions: report.CurrentVersions()}
	runs := cfg.Runs()
	for i, sp := range runs {
		opt.Progress.Phase(fmt.Sprintf("run %d/%d: %s", i+1, len(runs), sp.Title), sp.Duration+setupAllowance)
		res, err := runOne(ctx, sp, fmt.Sprintf("%s%c", prefix, 'a'+i%26))
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		run := analyse(res)
		if err != nil {
			run.Error = err.Error()
		}
		rep.Runs = append(rep.Runs, run)
	}
	finish(rep, cfg)
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
		rep.BDP = append(rep.BDP, report.BDPRow{DistanceKm: sp.DistanceKm, RTTMs: ms(sp.RTT), WindowBytes: w,
			LinkBps: float64(sp.RateBps), PredictedBps: pred, MeasuredBps: meas, RelErr: metrics.RelErr(meas, pred), Run: sp.Name})
	}
	if cfg.Scenario == "l4s-demo" {
		rep.Comparison = appleComparison(rep)
	}
	rep.Checks = checks(rep)
	rep.Notes = notes(cfg)
}

// runOne builds a topology for sp, runs its flows and collects what they
// and the hop saw. The topology is torn down before it returns, whatever
// happens; the result is usable (possibly partial) even with an error.
func runOne(ctx context.Context, sp RunSpec, prefix string) (res *runResult, err error) {
	res = &runResult{spec: sp}
	dir := hop.Direction{
		Link:  shaper.Config{Rate: shaper.Const{BitsPerSecond: sp.RateBps}, Delay: int64(sp.RTT / 2)},
		Queue: sp.Queue,
	}
	pair, err := hop.NewPair(ctx, prefix, hop.Config{Name: sp.Name, Up: dir, Down: dir, Seed: sp.Seed})
	if err != nil {
		return res, fmt.Errorf("topology: %w", err)
	}
	defer func() {
		if cerr := pair.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("teardown: %w", cerr)
		}
	}()
	for _, ns := range []string{pair.ClientNS, pair.ServerNS} {
		// Classic load is Not-ECT: no ECN negotiation from either end.
		if err := tun.WriteSysctl(ns, "net/ipv4/tcp_ecn", "0"); err != nil {
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

// endpoints are a run's open sockets, one set per flow.
type endpoints struct {
	sp      RunSpec
	flows   []endpoint
	bulkLn  net.Listener // server side of every TCP flow
	closers []func() error
}

type endpoint struct {
	spec       FlowSpec
	send, recv *net.UDPConn // UDP flows: sender on the server, receiver on the client
	peer       netip.AddrPort
	tcp        net.Conn // TCP flows: the client's connection
}

func (e *endpoints) close() {
	for _, c := range e.closers {
		c()
	}
	e.closers = nil
}

// First port of the lab's flows; each flow takes the next.
const basePort = 5100

func openEndpoints(pair *hop.Pair, sp RunSpec) (*endpoints, error) {
	e := &endpoints{sp: sp}
	server := pair.ServerAddr
	for i, fs := range sp.Flows {
		ep := endpoint{spec: fs}
		port := uint16(basePort + i)
		switch fs.Kind {
		case KindVideo, KindPrague:
			ep.peer = netip.AddrPortFrom(pair.ClientAddr, port)
			err := pair.InClient(func() (err error) {
				ep.recv, err = net.ListenUDP("udp", net.UDPAddrFromAddrPort(ep.peer))
				return err
			})
			if err != nil {
				return e, fmt.Errorf("%s: receiver socket: %w", fs.Label, err)
			}
			e.closers = append(e.closers, ep.recv.Close)
			err = pair.InServer(func() (err error) {
				ep.send, err = net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.AddrPortFrom(server, 0)))
				return err
			})
			if err != nil {
				return e, fmt.Errorf("%s: sender socket: %w", fs.Label, err)
			}
			e.closers = append(e.closers, ep.send.Close)
		case KindCubic:
			if e.bulkLn == nil {
				lc := net.ListenConfig{Control: tcpSenderControl(fs.Window)}
				err := pair.InServer(func() (err error) {
					e.bulkLn, err = lc.Listen(context.Background(), "tcp", netip.AddrPortFrom(server, basePort-1).String())
					return err
				})
				if err != nil {
					return e, fmt.Errorf("%s: listener: %w", fs.Label, err)
				}
				e.closers = append(e.closers, e.bulkLn.Close)
			}
			d := net.Dialer{Control: tcpReceiverControl(fs.Window), Timeout: 5 * time.Second}
			err := pair.InClient(func() (err error) {
				ep.tcp, err = d.Dial("tcp", e.bulkLn.Addr().String())
				return err
			})
			if err == nil && fs.Window > 0 {
				ep.tcp = newClampConn(ep.tcp.(*net.TCPConn), fs.Window)
			}
			if err != nil {
				return e, fmt.Errorf("%s: connect: %w", fs.Label, err)
			}
			e.closers = append(e.closers, ep.tcp.Close)
		default:
			return e, fmt.Errorf("%s: unknown flow kind %q", fs.Label, fs.Kind)
		}
		e.flows = append(e.flows, ep)
	}
	return e, nil
}

// drainTime is how long receivers keep listening after the senders stop,
// so packets still in the queue and delay line are counted as received.
const drainTime = 300 * time.Millisecond

// run starts every flow together, samples the hop's stats while they run
// and fills res. Receivers stop drainTime after the last sender.
func (e *endpoints) run(ctx context.Context, pair *hop.Pair, res *runResult) error {
	sp := e.sp
	recvCtx, stopRecv := context.WithCancel(ctx)
	defer stopRecv()
	sendCtx, stopSend := context.WithTimeout(ctx, sp.Duration+5*time.Second) // a safety net: senders stop by themselves
	defer stopSend()

	res.flows = make([]flowResult, len(e.flows))
	var senders, receivers sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	fail := func(label string, err error) {
		if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, net.ErrClosed) {
			mu.Lock()
			errs = append(errs, fmt.Errorf("%s: %w", label, err))
			mu.Unlock()
		}
	}
	if e.bulkLn != nil {
		receivers.Add(1)
		go func() {
			defer receivers.Done()
			fail("bulk server", flow.BulkServe(recvCtx, e.bulkLn))
		}()
	}
	sampler := startSampler(pair)
	for i, ep := range e.flows {
		fr := &res.flows[i]
		fr.spec = ep.spec
		label := ep.spec.Label
		switch ep.spec.Kind {
		case KindVideo:
			vc := flow.VideoConfig{ECN: ep.spec.ECN, Seed: sp.Seed + uint64(i), Duration: sp.Duration, Interval: time.Second, Label: label}
			receivers.Add(1)
			go func() {
				defer receivers.Done()
				rc := vc
				rc.Duration = 0 // until stopped: count everything the sender sent
				s, err := flow.VideoRecv(recvCtx, ep.recv, rc, nil)
				fr.videoRecv = &s
				fail(label+" receiver", err)
			}()
			senders.Add(1)
			go func() {
				defer senders.Done()
				s, err := flow.VideoSend(sendCtx, ep.send, ep.peer, vc, nil)
				fr.videoSend = &s
				fail(label+" sender", err)
			}()
		case KindPrague:
			pc := flow.PragueConfig{ECN: ep.spec.ECN, Duration: sp.Duration, Interval: time.Second, Label: label}
			receivers.Add(1)
			go func() {
				defer receivers.Done()
				rc := pc
				rc.Duration = 0
				s, err := flow.PragueRecv(recvCtx, ep.recv, rc, nil)
				fr.pragueRecv = &s
				fail(label+" receiver", err)
			}()
			senders.Add(1)
			go func() {
				defer senders.Done()
				s, err := flow.PragueSend(sendCtx, ep.send, ep.peer, pc, nil)
				fr.pragueSend = &s
				fail(label+" sender", err)
			}()
		case KindCubic:
			senders.Add(1)
			go func() {
				defer senders.Done()
				s, err := flow.BulkFetch(sendCtx, ep.tcp, sp.Duration, nil)
				fr.bulk = &s
				fail(label, err)
			}()
		}
	}
	senders.Wait()
	select {
	case <-time.After(drainTime):
	case <-ctx.Done():
	}
	res.samples = sampler.stop()
	stopRecv()
	e.close() // unblocks a receiver or server stuck in a read
	receivers.Wait()
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return errors.Join(errs...)
}

// sampler polls the hop's stats while a run's traffic flows.
type sampler struct {
	done    chan struct{}
	stopped chan struct{}
	samples []queueSample
}

// samplePoll is how often the sampler asks; the hop publishes new
// figures every hop.DefaultStatsInterval, and repeats are skipped.
const samplePoll = 20 * time.Millisecond

func startSampler(pair *hop.Pair) *sampler {
	s := &sampler{done: make(chan struct{}), stopped: make(chan struct{})}
	first := pair.Hop.Stats()
	start, seq := first.Down.Elapsed, first.Down.Seq
	s.samples = append(s.samples, sampleOf(&first.Down, 0))
	go func() {
		defer close(s.stopped)
		t := time.NewTicker(samplePoll)
		defer t.Stop()
		for {
			select {
			case <-s.done:
				return
			case <-t.C:
				snap := pair.Hop.Stats()
				if snap.Down.Seq != seq {
					seq = snap.Down.Seq
					s.samples = append(s.samples, sampleOf(&snap.Down, time.Duration(snap.Down.Elapsed-start)))
				}
			}
		}
	}()
	return s
}

func (s *sampler) stop() []queueSample {
	close(s.done)
	<-s.stopped
	return s.samples
}
