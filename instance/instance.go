package instance

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"

	"github.com/pi2hop/pi2hop/hop"
	"github.com/pi2hop/pi2hop/internal/connlimit"
	"github.com/pi2hop/pi2hop/lan"
	"github.com/pi2hop/pi2hop/netsys"
	"github.com/pi2hop/pi2hop/pcap"
	"github.com/pi2hop/pi2hop/tun"
)

// Topology is where an instance's hop sits and what it does while it
// runs. Run calls Start, then Wait, then Close, each once.
type Topology interface {
	// Kind names the topology in the start-up line: "gateway", "shell".
	Kind() string
	// Start builds the topology and starts its hop with env.Config,
	// recording every change to the system in env.Journal (which the
	// instance undoes after Close) and installing env.Tap(""). It returns
	// the hop the control socket and the metrics serve, or nil when the
	// topology runs hops of its own (a Task).
	Start(ctx context.Context, env *Env) (*hop.Hop, error)
	// Attrs are the topology's own fields of the start-up line.
	Attrs() []any
	// Wait blocks until the instance's work is over: ctx done (a
	// signal), the hop stopping, a command exiting. Its error is the
	// instance's result.
	Wait(ctx context.Context) error
	// Close stops what Start started, the hop and its devices included.
	// It is called after the control socket has stopped, also when Start
	// failed or was never called (the capture did not open).
	Close() error
}

// Env is what a topology gets to build with.
type Env struct {
	Name    string
	Config  hop.Config // the hop to start, with Logger set
	Journal *netsys.Journal
	Log     *slog.Logger
	capture *pcap.Capture
	claim   *claimed // the state file; nil for an anonymous instance
}

// Capture is the instance's capture file, or nil without one. The
// instance closes it after the topology, when the taps have stopped.
func (e *Env) Capture() *pcap.Capture { return e.capture }

// Tap returns new capture taps named prefix+"up-in" and so on (each call
// adds interfaces to the capture file), or nil without a capture.
func (e *Env) Tap(prefix string) hop.Tap {
	if e.capture == nil {
		return nil
	}
	return pcap.NewHopTap(e.capture, prefix)
}

// Options describe an instance.
type Options struct {
	// Name claims a state file and a control socket. "" runs an
	// anonymous instance: no state file, no control socket, no metrics.
	Name    string
	Command string // for the state file and messages: "run", "shell"
	// Settings are the link as given; a set request merges over them.
	// Config is what they resolve to (Settings.Resolve), with the
	// caller's tuning (CPULatency).
	Settings Settings
	Config   hop.Config
	Metrics  string // serve Prometheus metrics on this host:port ("" = none)
	// Web starts a viewer of the running instance (the browser view),
	// if not nil; it returns what to close and the address a person
	// opens (with its token), which the start-up lines show.
	Web func(Live) (io.Closer, string, error)
	// Capture opens the capture file, if not nil (after the name is claimed).
	Capture func() (*pcap.Capture, error)
	Stderr  io.Writer // logs
	Verbose bool      // debug logs too
	// LogFormat is LogText (the default for "") or LogJSON.
	LogFormat string
	// Attrs are more fields of the start-up line (the capture's path).
	Attrs []any
}

// instance is a running instance: what the control socket edits.
type instance struct {
	log  *slog.Logger
	hop  *hop.Hop
	topo Topology

	mu       sync.Mutex // serialises set requests: base and the hop's config move together
	settings Settings

	conns Conns // the control socket's, web view's and metrics' connections
}

// Run runs an instance of topo until its work is over, then takes
// everything down in order (see the package comment) and returns the
// topology's result joined with any failure to clean up.
func Run(ctx context.Context, opt Options, topo Topology) (err error) {
	if opt.Name != "" {
		if err := CheckName(opt.Name); err != nil {
			return err
		}
	}
	if os.Geteuid() != 0 {
		return fmt.Errorf("%s needs root (TUN devices, namespaces, routes)", opt.Command)
	}
	level := slog.LevelInfo
	if opt.Verbose {
		level = slog.LevelDebug
	}
	stderr := opt.Stderr
	if stderr == nil {
		stderr = io.Discard
	}
	log, structured := newLogger(stderr, opt.LogFormat, level)
	j := netsys.NewJournal(nil)
	var c *claimed
	if opt.Name != "" {
		log = log.With("instance", opt.Name)
		if c, j, err = claim(opt.Name, opt.Command); err != nil {
			return err
		}
	}
	warnLeftovers(log, opt.Name)
	raiseFDLimit(log)
	in := &instance{log: log, settings: opt.Settings.withAbsTraces(), topo: topo}
	env := &Env{Name: opt.Name, Config: opt.Config, Journal: j, Log: log, claim: c}
	env.Config.Logger = log
	var closers []io.Closer
	defer func() {
		errs := []error{err}
		for i := len(closers) - 1; i >= 0; i-- {
			errs = append(errs, closers[i].Close())
		}
		errs = append(errs, topo.Close())
		if env.capture != nil { // after the hops: their taps have stopped
			errs = append(errs, env.capture.Close())
		}
		uerr := j.Undo()
		errs = append(errs, uerr)
		switch {
		case uerr != nil && opt.Name != "":
			log.Error("cleanup incomplete; run '"+CleanupCommand(opt.Command, opt.Name)+"'", "err", uerr)
		case uerr != nil:
			log.Error("cleanup incomplete", "err", uerr)
		case opt.Name != "":
			os.Remove(StatePath(opt.Name))
		}
		err = errors.Join(errs...)
	}()

	if opt.Capture != nil {
		if env.capture, err = opt.Capture(); err != nil {
			return err
		}
	}
	if in.hop, err = topo.Start(ctx, env); err != nil {
		return err
	}
	attrs := []any{}
	extras := extrasFrom(opt.Attrs)
	if in.hop != nil && opt.Name != "" {
		ctl, err := listenControl(opt.Name, in, &in.conns.Control, serverLog(log))
		if err != nil {
			return err
		}
		closers = append(closers, ctl)
		attrs = append(attrs, "control", SocketPath(opt.Name), "state", StatePath(opt.Name))
		if opt.Metrics != "" {
			m, err := serveMetrics(opt.Metrics, in.hop, &in.conns, serverLog(log))
			if err != nil {
				return err
			}
			closers = append(closers, m)
			attrs = append(attrs, "metrics", opt.Metrics)
			if a, err := MetricsListenAddr(opt.Metrics); err == nil {
				extras.Metrics = "http://" + a + "/metrics"
			}
		}
	}
	if in.hop != nil {
		closers = append(closers, watchBottleneck(in.hop, log))
	}
	if in.hop != nil && opt.Web != nil {
		w, url, err := opt.Web(Live{in})
		if err != nil {
			return err
		}
		closers = append(closers, w)
		extras.Web = url
		attrs = append(attrs, "web", url)
	}
	if in.hop != nil {
		c := in.hop.Config()
		cpu := any(c.CPULatency)
		if c.CPULatency < 0 {
			cpu = "off"
		}
		attrs = append(attrs, "up", c.Up, "down", c.Down, "cpu_latency", cpu, "tun", tunBackend(log, c.TUN, in.hop))
	}
	// A person reads a few lines; the record with every field goes to a
	// reader that keeps it (JSON, the journal), else at debug level.
	record := append(append(topo.Attrs(), attrs...), opt.Attrs...)
	if structured {
		log.Info("pi2hop running: "+topo.Kind(), record...)
	} else {
		log.Debug("pi2hop running: "+topo.Kind(), record...)
	}
	if opt.LogFormat != LogJSON && in.hop != nil {
		io.WriteString(stderr, startupMessage(opt.Command, opt.Name, in.hop.Config(), opt.Settings, extras, topo))
	}
	if in.hop != nil {
		for _, d := range hop.Degradations(in.hop.Config()) {
			log.Warn(d.String(), "degraded", d.Name)
		}
	}
	for _, w := range opt.Settings.Warnings() {
		log.Warn(w)
	}
	return topo.Wait(ctx)
}

// warnLeftovers says, for each dead instance other than self whose
// changes are still on the system, the command that removes them.
func warnLeftovers(log *slog.Logger, self string) {
	ls, err := Leftovers()
	if err != nil {
		log.Warn("cannot look for dead instances' leftovers", "err", err)
		return
	}
	for _, l := range ls {
		if l.Name == self {
			continue
		}
		log.Warn(fmt.Sprintf("instance %q (pid %d) is gone but left %d changes behind; remove them with '%s'",
			l.Name, l.State.PID, len(l.State.Entries), l.Command()), "state", StatePath(l.Name))
	}
}

func (in *instance) stats() hop.Snapshot { return in.hop.Stats() }

func (in *instance) statsFlows(top int) (hop.Snapshot, [2]hop.FlowTable) {
	return in.hop.StatsFlows(top)
}

// Live is a running instance as an in-process viewer sees it: what the
// control socket serves, the same calls.
type Live struct{ in *instance }

// Stats returns the hop's snapshot, as `stats` gets it.
func (l Live) Stats() hop.Snapshot { return l.in.stats() }

// Clients are a share's LAN devices (nil for other topologies).
func (l Live) Clients() ([]lan.Client, error) { return l.in.clients() }

// StatsFlows returns the snapshot with each direction's top flows, as
// `stats --flows` gets them.
func (l Live) StatsFlows(top int) (hop.Snapshot, [2]hop.FlowTable) { return l.in.statsFlows(top) }

// Set applies a typed edit exactly as a `set` request does.
func (l Live) Set(s Settings) ([]string, error) { return l.in.set(s) }

// WebConns are the counters a web view of the instance keeps its
// connections in: stats and the metrics show them.
func (l Live) WebConns() *connlimit.Counters { return &l.in.conns.Web }

// Log is the instance's log, where a web view of it writes its errors.
func (l Live) Log() *slog.Logger { return l.in.log }

func (in *instance) connStats() ConnStats { return in.conns.Stats() }

// clientLister is a topology with devices of its own to list (Share).
type clientLister interface {
	Clients() ([]lan.Client, error)
}

func (in *instance) clients() ([]lan.Client, error) {
	if cl, ok := in.topo.(clientLister); ok {
		return cl.Clients()
	}
	return nil, nil
}

// tunBackend describes h's TUN backend for the start-up line (with the
// offloads the kernel accepted), and warns when offload was asked for and
// the kernel refused it: plain costs a system call per packet.
func tunBackend(log *slog.Logger, asked tun.Backend, h *hop.Hop) string {
	d, _ := h.Devices()
	desc, ok := d.(tun.Describer)
	if !ok {
		return "unknown"
	}
	s := desc.Backend()
	if _, off := d.(tun.OffloadCounter); !off && asked != tun.BackendPlain {
		log.Warn("TUN offload refused by the kernel: forwarding one packet per system call", "tun", s)
	}
	return s
}

// settingsInForce are the settings the hop runs with: as given, with
// each set request laid over them.
func (in *instance) settingsInForce() Settings {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.settings
}

// set applies a set request: its settings over the instance's, checked as
// a whole and applied all or nothing.
func (in *instance) set(s Settings) ([]string, error) {
	in.mu.Lock()
	defer in.mu.Unlock()
	next, merged, err := PlanSet(in.settings, s, in.hop.Config())
	if err != nil {
		return nil, err
	}
	if err := in.hop.Reconfigure(next); err != nil {
		return nil, rangeField(err, s)
	}
	in.settings = merged
	c := in.hop.Config()
	in.log.Info("changed", "up", c.Up, "down", c.Down)
	return append(merged.Warnings(), merged.Shadowed(s)...), nil
}
