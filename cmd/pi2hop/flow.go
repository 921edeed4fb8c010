package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/pi2hop/pi2hop/flow"
	"github.com/pi2hop/pi2hop/internal/clidoc"
	"github.com/pi2hop/pi2hop/internal/flagvalue"
)

var flowCmd = &command{
	name:  "flow",
	short: "traffic endpoints: Prague (L4S or classic), a video call, bulk TCP, an ECN round-trip probe",
	usage: "flow SUBCOMMAND [flags]",
	examples: []example{
		{"pi2hop flow prague-recv --listen :5000", "an L4S receiver"},
		{"pi2hop flow prague-send --to 10.254.1.1:5000 --duration 10s", "an L4S flow to it for 10 s"},
	},
	long: "Each works across real networks too, not only in pi2hop lab.",
	subs: []*command{
		flowSub("prague-send", "--to ADDR:PORT [--ecn l4s|classic] [--max-rate R] [--rfc8888]", "send a UDP Prague flow (udp_prague wire format) to a prague-recv", pragueSendCmd),
		flowSub("prague-recv", "--listen ADDR:PORT [--ecn l4s|classic] [--rfc8888]", "receive a UDP Prague flow and ACK every packet (or report them in blocks)", pragueRecvCmd),
		flowSub("video-send", "--to ADDR:PORT [--ecn l4s|classic] [--fps N]", "send a 30 fps video call over Prague congestion control", videoSendCmd),
		flowSub("video-recv", "--listen ADDR:PORT [--ecn l4s|classic]", "receive a video call: fps, stalls, frame delay, loss", videoRecvCmd),
		flowSub("bulk", "--listen ADDR:PORT [--cc cubic] | --to ADDR:PORT", "kernel TCP bulk transfer: the server sends, the client measures goodput", bulkCmd),
		flowSub("probe", "--listen ADDR:PORT | --to ADDR:PORT [--ecn l4s|classic|ect0|ce] [--every 10ms]", "UDP round trips with a chosen ECN codepoint (L or C queue, both ways)", probeCmd),
	},
}

// flowExamples are each subcommand's examples: both ends of a test.
var flowExamples = map[string][]example{
	"prague-send": {
		{"pi2hop flow prague-send --to 10.254.1.2:5000", "an L4S Prague flow until interrupted"},
		{"pi2hop flow prague-send --to 10.254.1.2:5000 --ecn classic --duration 30s", "the same flow classic, for 30 s"},
	},
	"prague-recv": {
		{"pi2hop flow prague-recv --listen :5000", "receive and ACK every packet"},
		{"pi2hop flow prague-recv --listen :5000 --rfc8888 --json", "feedback in RFC 8888 blocks, reports as JSON"},
	},
	"video-send": {
		{"pi2hop flow video-send --to 10.254.1.2:6000", "a 30 fps call over L4S"},
		{"pi2hop flow video-send --to 10.254.1.2:6000 --ecn classic --fps 60", "a classic 60 fps call"},
	},
	"video-recv": {
		{"pi2hop flow video-recv --listen :6000", "receive the call: fps, stalls, frame delay"},
		{"pi2hop flow video-recv --listen :6000 --json", "the same as JSON lines"},
	},
	"bulk": {
		{"pi2hop flow bulk --listen :7000 --cc cubic", "the sending side"},
		{"pi2hop flow bulk --to 10.254.1.1:7000 --duration 20s", "download for 20 s and print goodput"},
	},
	"probe": {
		{"pi2hop flow probe --listen :8000", "echo probes back"},
		{"pi2hop flow probe --to 10.254.1.1:8000 --ecn l4s --every 10ms", "round trips through the L queue every 10 ms"},
	},
}

// flowSub makes a `pi2hop flow` subcommand: it takes no positional
// arguments, and its errors name it.
func flowSub(name, synopsis, short string, setup func(fs *pflag.FlagSet) func(context.Context, *cmdEnv) error) *command {
	return &command{name: name, usage: name + " " + synopsis, short: short, examples: flowExamples[name],
		flags: func(fs *pflag.FlagSet) func(context.Context, *cmdEnv, []string) error {
			run := setup(fs)
			return func(ctx context.Context, env *cmdEnv, args []string) error {
				if len(args) > 0 {
					return usagef("flow %s: unexpected argument %q", name, args[0])
				}
				err := run(ctx, env)
				var ue *usageError
				if err != nil && !errors.As(err, &ue) && !strings.HasPrefix(err.Error(), name+":") {
					err = fmt.Errorf("%s: %w", name, err)
				}
				return err
			}
		}}
}

// flowArgs are the flags the subcommands share; each declares the ones it uses.
type flowArgs struct {
	to, listen, bind string
	ecn              string
	rfc8888          bool // block feedback (type 18) instead of an ACK per packet
	noValidation     bool // senders: no ECN validation
	duration         flagvalue.Duration
	every            flagvalue.Duration // interval reports
	json             bool
	label            string
}

func (a *flowArgs) peerFlags(fs *pflag.FlagSet) {
	fs.StringVar(&a.to, "to", "", "receiver `ADDR:PORT` (host names resolve)")
	fs.StringVar(&a.bind, "bind", "", "local `ADDR:PORT` to send from (default: any, on the peer's address family)")
}

func (a *flowArgs) listenFlag(fs *pflag.FlagSet) {
	fs.StringVar(&a.listen, "listen", "", "local `ADDR:PORT` to receive on, e.g. :8080 or [::]:8080")
}

// noValidationFlag declares the senders' --no-ecn-validation.
func (a *flowArgs) noValidationFlag(fs *pflag.FlagSet) {
	fs.BoolVar(&a.noValidation, "no-ecn-validation", false, "keep sending ECT(1) whatever the path does to it (a naive app); by default the sender checks the receiver's ECN counts and falls back to Not-ECT on a path that bleaches, re-marks, mangles or drops ECN")
}

func (a *flowArgs) ecnFlag(fs *pflag.FlagSet) {
	fs.StringVar(&a.ecn, "ecn", flow.ECNL4S, "`mode`: l4s (ECT(1), Prague response) or classic (Not-ECT, loss-only); must match on both ends")
	fs.BoolVar(&a.rfc8888, "rfc8888", false, "feedback in RFC 8888-style blocks every 25 ms (udp_prague's --rfc8888, type 18) instead of an ACK per packet; must match on both ends")
}

// outputFlags declares --duration, --json, --label and, when the
// subcommand's report period can be set, --every: how often an interval
// report is printed (--interval before this release). bulk and probe
// report once a second whatever is asked (probe's --every is its probe
// period); their --interval was always ignored and still is, with a note.
func (a *flowArgs) outputFlags(fs *pflag.FlagSet, defDuration time.Duration, what string, settable bool) {
	a.duration = flagvalue.Duration{D: defDuration, Min: 0}
	a.every = flagvalue.Duration{D: time.Second, Min: time.Millisecond}
	fs.Var(&a.duration, "duration", "how long to "+what+"; 0 = until interrupted")
	if settable {
		fs.Var(&a.every, "every", "print an interval report once per `period`")
		alias(fs, "interval", "every")
	} else {
		fs.Var(&a.every, "interval", "ignored")
		if err := fs.MarkDeprecated("interval", "ignored: this subcommand reports every second"); err != nil {
			panic(err)
		}
	}
	jsonFlag(fs, &a.json, "print JSON lines (one per interval, then a summary) instead of text")
	fs.StringVar(&a.label, "label", "", "`name` put in every report line")
}

// inputError makes the endpoint library's word on a bad address or mode a
// usage error naming the flag.
func inputError(err error) error {
	var ie *flow.InputError
	if errors.As(err, &ie) {
		return usagef("--%v", ie)
	}
	return err
}

func (a *flowArgs) checkECN() error { return inputError(flow.CheckECN(a.ecn)) }

func (a *flowArgs) dialUDP() (*net.UDPConn, netip.AddrPort, error) {
	c, peer, err := flow.DialUDP(a.to, a.bind)
	return c, peer, inputError(err)
}

func (a *flowArgs) listenUDP() (*net.UDPConn, error) {
	c, err := flow.ListenUDP(a.listen)
	return c, inputError(err)
}

// openReceiver checks --ecn, opens the --listen socket and the output: what
// every receiving subcommand starts with.
func (a *flowArgs) openReceiver(env *cmdEnv) (*net.UDPConn, *flow.Reporter, error) {
	if err := a.checkECN(); err != nil {
		return nil, nil, err
	}
	conn, err := a.listenUDP()
	if err != nil {
		return nil, nil, err
	}
	return conn, a.reporter(env), nil
}

func (a *flowArgs) reporter(env *cmdEnv) *flow.Reporter {
	return flow.NewReporter(env.stdout, a.json, a.label)
}

func pragueSendCmd(fs *pflag.FlagSet) func(context.Context, *cmdEnv) error {
	var a flowArgs
	var maxRate flagvalue.Rate
	mtu := flagvalue.IntRange{N: 1400, Min: 150, Max: 65507}
	a.peerFlags(fs)
	a.ecnFlag(fs)
	fs.Var(&maxRate, "max-rate", "never send faster than `rate`, tc units (10mbit); default no limit")
	fs.Var(&mtu, "mtu", "largest UDP payload in `bytes`")
	a.noValidationFlag(fs)
	a.outputFlags(fs, 10*time.Second, "send", true)
	return func(ctx context.Context, env *cmdEnv) error {
		if err := a.checkECN(); err != nil {
			return err
		}
		conn, peer, err := a.dialUDP()
		if err != nil {
			return err
		}
		defer conn.Close()
		out := a.reporter(env)
		cfg := flow.PragueConfig{ECN: a.ecn, MaxRate: maxRate.BPS, MTU: mtu.N, Duration: a.duration.D, Interval: a.every.D, Label: a.label, RFC8888: a.rfc8888, NoECNValidation: a.noValidation}
		s, err := flow.PragueSend(ctx, conn, peer, cfg, out.Interval)
		out.SenderSummary("prague-send", s)
		return err
	}
}

func pragueRecvCmd(fs *pflag.FlagSet) func(context.Context, *cmdEnv) error {
	var a flowArgs
	a.listenFlag(fs)
	a.ecnFlag(fs)
	a.outputFlags(fs, 0, "receive", true)
	return func(ctx context.Context, env *cmdEnv) error {
		conn, out, err := a.openReceiver(env)
		if err != nil {
			return err
		}
		defer conn.Close()
		cfg := flow.PragueConfig{ECN: a.ecn, Duration: a.duration.D, Interval: a.every.D, Label: a.label, RFC8888: a.rfc8888}
		s, err := flow.PragueRecv(ctx, conn, cfg, out.Interval)
		out.ReceiverSummary(s)
		return err
	}
}

// fpsFlag declares --fps, which both video ends take.
func fpsFlag(fs *pflag.FlagSet) *flagvalue.IntRange {
	fps := &flagvalue.IntRange{N: 30, Min: 1, Max: 240}
	fs.Var(fps, "fps", "`N` frames per second")
	return fps
}

func videoSendCmd(fs *pflag.FlagSet) func(context.Context, *cmdEnv) error {
	var a flowArgs
	var cfg flow.VideoConfig
	minRate, maxRate := flagvalue.Rate{BPS: 300_000}, flagvalue.Rate{BPS: 8_000_000}
	keyEvery := flagvalue.Duration{D: 2 * time.Second, Min: time.Millisecond}
	budget := flagvalue.Duration{D: 15 * time.Millisecond, Min: time.Millisecond}
	a.peerFlags(fs)
	a.ecnFlag(fs)
	fps := fpsFlag(fs)
	fs.Var(&minRate, "min-rate", "encoder's lowest target `rate`")
	fs.Var(&maxRate, "max-rate", "encoder's highest target `rate`")
	fs.Var(&keyEvery, "keyframe-every", "periodic keyframe `interval` (also on the receiver's PLI)")
	fs.Var(&budget, "budget", "send each frame within this `time`, or at the Prague rate if slower")
	fs.Uint64Var(&cfg.Seed, "seed", 1, "seed of the frame-size noise")
	a.noValidationFlag(fs)
	a.outputFlags(fs, 30*time.Second, "send", true)
	return func(ctx context.Context, env *cmdEnv) error {
		if err := a.checkECN(); err != nil {
			return err
		}
		if maxRate.BPS < minRate.BPS {
			return usagef("--max-rate %s is below --min-rate %s", maxRate.String(), minRate.String())
		}
		conn, peer, err := a.dialUDP()
		if err != nil {
			return err
		}
		defer conn.Close()
		out := a.reporter(env)
		cfg.ECN, cfg.RFC8888, cfg.FPS, cfg.MinRate, cfg.MaxRate = a.ecn, a.rfc8888, fps.N, minRate.BPS, maxRate.BPS
		cfg.KeyframeEvery, cfg.FrameBudget, cfg.NoECNValidation = keyEvery.D, budget.D, a.noValidation
		cfg.Duration, cfg.Interval, cfg.Label = a.duration.D, a.every.D, a.label
		s, err := flow.VideoSend(ctx, conn, peer, cfg, out.Interval)
		out.VideoSenderSummary(s)
		return err
	}
}

func videoRecvCmd(fs *pflag.FlagSet) func(context.Context, *cmdEnv) error {
	var a flowArgs
	var cfg flow.VideoConfig
	playout := flagvalue.Duration{D: 80 * time.Millisecond, Min: time.Millisecond}
	a.listenFlag(fs)
	a.ecnFlag(fs)
	fps := fpsFlag(fs)
	fs.Var(&playout, "playout", "playout `delay` after capture (needs clocks in sync across machines)")
	a.outputFlags(fs, 0, "receive", true)
	return func(ctx context.Context, env *cmdEnv) error {
		conn, out, err := a.openReceiver(env)
		if err != nil {
			return err
		}
		defer conn.Close()
		cfg.ECN, cfg.RFC8888, cfg.FPS, cfg.Playout = a.ecn, a.rfc8888, fps.N, playout.D
		cfg.Duration, cfg.Interval, cfg.Label = a.duration.D, a.every.D, a.label
		s, err := flow.VideoRecv(ctx, conn, cfg, out.Interval)
		out.VideoSummary(s)
		return err
	}
}

func bulkCmd(fs *pflag.FlagSet) func(context.Context, *cmdEnv) error {
	var a flowArgs
	a.listenFlag(fs)
	fs.StringVar(&a.to, "to", "", "server `ADDR:PORT` to fetch from (client)")
	cc := fs.String("cc", flow.DefaultBulkCC, "server's TCP congestion `control` (cubic, reno, bbr, ...)")
	a.outputFlags(fs, 10*time.Second, "fetch (client)", false)
	return func(ctx context.Context, env *cmdEnv) error {
		if (a.to == "") == (a.listen == "") {
			return usagef("give exactly one of --listen (server) and --to (client)")
		}
		if a.listen != "" {
			ln, err := net.Listen("tcp", a.listen)
			if err != nil {
				return err
			}
			fmt.Fprintf(env.stderr, "bulk: serving on %v with %s\n", ln.Addr(), *cc)
			return flow.BulkServeWith(ctx, ln, flow.BulkOptions{CC: *cc})
		}
		conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", a.to)
		if err != nil {
			return err
		}
		out := a.reporter(env)
		s, err := flow.BulkFetch(ctx, conn, a.duration.D, out.Interval)
		out.BulkSummary(s)
		return err
	}
}

func probeCmd(fs *pflag.FlagSet) func(context.Context, *cmdEnv) error {
	var a flowArgs
	every := flagvalue.Duration{D: 10 * time.Millisecond, Min: 100 * time.Microsecond}
	a.listenFlag(fs)
	a.peerFlags(fs)
	fs.StringVar(&a.ecn, "ecn", "l4s", "probe `codepoint`: l4s (ECT(1)), classic (Not-ECT), ect0 or ce")
	fs.Var(&every, "every", "send one probe per `period`")
	clidoc.Annotate(fs, "every", clidoc.GroupAnnotation, "") // the probes' pace, not an output's repeat
	a.outputFlags(fs, 10*time.Second, "probe (client)", false)
	return func(ctx context.Context, env *cmdEnv) error {
		if (a.to == "") == (a.listen == "") {
			return usagef("give exactly one of --listen (server) and --to (client)")
		}
		if a.listen != "" {
			conn, err := a.listenUDP()
			if err != nil {
				return err
			}
			defer conn.Close()
			fmt.Fprintf(env.stderr, "probe: answering on %v\n", conn.LocalAddr())
			return flow.ProbeServe(ctx, conn)
		}
		e, err := flow.ParseProbeECN(a.ecn)
		if err != nil {
			return inputError(err)
		}
		conn, peer, err := a.dialUDP()
		if err != nil {
			return err
		}
		defer conn.Close()
		out := a.reporter(env)
		s, err := flow.Probe(ctx, conn, peer, e, every.D, a.duration.D, out.Interval)
		out.ProbeSummary(s)
		return err
	}
}
