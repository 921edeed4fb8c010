package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/dist"
	"github.com/pi2hop/pi2hop/testbed/flow"
)

func init() {
	register(&command{
		name:  "flow",
		short: "traffic endpoints: Prague (L4S or classic), a video call, bulk TCP, an ECN round-trip probe",
		usage: "flow SUBCOMMAND [flags]",
		long:  "Each works across real networks too, not only in pi2hop lab.",
		subs: []*command{
			flowSub("prague-send", "--to ADDR:PORT [--ecn l4s|classic] [--max-rate R]", "send a UDP Prague flow (udp_prague wire format) to a prague-recv", pragueSendCmd),
			flowSub("prague-recv", "--listen ADDR:PORT [--ecn l4s|classic]", "receive a UDP Prague flow and ACK every packet", pragueRecvCmd),
			flowSub("video-send", "--to ADDR:PORT [--ecn l4s|classic] [--fps N]", "send a 30 fps video call over Prague congestion control", videoSendCmd),
			flowSub("video-recv", "--listen ADDR:PORT [--ecn l4s|classic]", "receive a video call: fps, stalls, frame delay, loss", videoRecvCmd),
			flowSub("bulk", "--listen ADDR:PORT [--cc cubic] | --to ADDR:PORT", "kernel TCP bulk transfer: the server sends, the client measures goodput", bulkCmd),
			flowSub("probe", "--listen ADDR:PORT | --to ADDR:PORT [--ecn l4s|classic|ect0|ce] [--every 10ms]", "UDP round trips with a chosen ECN codepoint (L or C queue, both ways)", probeCmd),
		},
	})
}

// flowSub makes a `pi2hop flow` subcommand: it takes no positional
// arguments, and its errors name it.
func flowSub(name, synopsis, short string, setup func(fs *pflag.FlagSet) func(context.Context, *cmdEnv) error) *command {
	return &command{name: name, usage: name + " " + synopsis, short: short,
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
	duration         durationValue
	every            durationValue // interval reports
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

func (a *flowArgs) ecnFlag(fs *pflag.FlagSet) {
	fs.StringVar(&a.ecn, "ecn", flow.ECNL4S, "`mode`: l4s (ECT(1), Prague response) or classic (Not-ECT, loss-only); must match on both ends")
}

// outputFlags declares --duration, --json, --label and, when the
// subcommand's report period can be set, --every: how often an interval
// report is printed (--interval before this release). bulk and probe
// report once a second whatever is asked (probe's --every is its probe
// period); their --interval was always ignored and still is, with a note.
func (a *flowArgs) outputFlags(fs *pflag.FlagSet, defDuration time.Duration, what string, settable bool) {
	a.duration = durationValue{d: defDuration, min: 0}
	a.every = durationValue{d: time.Second, min: time.Millisecond}
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

func (a *flowArgs) checkECN() error {
	if a.ecn != flow.ECNL4S && a.ecn != flow.ECNClassic {
		return usagef("--ecn %q: want %s or %s", a.ecn, flow.ECNL4S, flow.ECNClassic)
	}
	return nil
}

// dialUDP resolves --to and opens a socket on the peer's family.
func (a *flowArgs) dialUDP() (*net.UDPConn, netip.AddrPort, error) {
	if a.to == "" {
		return nil, netip.AddrPort{}, usagef("--to is required: the receiver's ADDR:PORT")
	}
	ra, err := net.ResolveUDPAddr("udp", a.to)
	if err != nil || ra.Port == 0 {
		return nil, netip.AddrPort{}, usagef("--to %q: want ADDR:PORT with a port, like 10.0.0.2:8080 or [::1]:8080", a.to)
	}
	peer := ra.AddrPort()
	peer = netip.AddrPortFrom(peer.Addr().Unmap(), peer.Port())
	network := "udp6"
	if peer.Addr().Is4() {
		network = "udp4"
	}
	var la *net.UDPAddr
	if a.bind != "" {
		if la, err = net.ResolveUDPAddr(network, a.bind); err != nil {
			return nil, peer, usagef("--bind %q: want ADDR:PORT of the %s family", a.bind, network)
		}
	}
	c, err := net.ListenUDP(network, la)
	return c, peer, err
}

// openReceiver checks --ecn, opens the --listen socket and the output: what
// every receiving subcommand starts with.
func (a *flowArgs) openReceiver(env *cmdEnv) (*net.UDPConn, *flowOut, error) {
	if err := a.checkECN(); err != nil {
		return nil, nil, err
	}
	conn, err := a.listenUDP()
	if err != nil {
		return nil, nil, err
	}
	return conn, newFlowOut(env.stdout, a.json, a.label), nil
}

func (a *flowArgs) listenUDP() (*net.UDPConn, error) {
	if a.listen == "" {
		return nil, usagef("--listen is required: the local ADDR:PORT, like :8080")
	}
	la, err := net.ResolveUDPAddr("udp", a.listen)
	if err != nil {
		return nil, usagef("--listen %q: want ADDR:PORT, like :8080 or [::]:8080", a.listen)
	}
	return net.ListenUDP("udp", la)
}

func pragueSendCmd(fs *pflag.FlagSet) func(context.Context, *cmdEnv) error {
	var a flowArgs
	var maxRate rateValue
	mtu := intRangeValue{n: 1400, min: 150, max: 65507}
	a.peerFlags(fs)
	a.ecnFlag(fs)
	fs.Var(&maxRate, "max-rate", "never send faster than `rate`, tc units (10mbit); default no limit")
	fs.Var(&mtu, "mtu", "largest UDP payload in `bytes`")
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
		out := newFlowOut(env.stdout, a.json, a.label)
		cfg := flow.PragueConfig{ECN: a.ecn, MaxRate: maxRate.bps, MTU: mtu.n, Duration: a.duration.d, Interval: a.every.d, Label: a.label}
		s, err := flow.PragueSend(ctx, conn, peer, cfg, out.interval)
		out.senderSummary("prague-send", s)
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
		cfg := flow.PragueConfig{ECN: a.ecn, Duration: a.duration.d, Interval: a.every.d, Label: a.label}
		s, err := flow.PragueRecv(ctx, conn, cfg, out.interval)
		out.receiverSummary(s)
		return err
	}
}

// fpsFlag declares --fps, which both video ends take.
func fpsFlag(fs *pflag.FlagSet) *intRangeValue {
	fps := &intRangeValue{n: 30, min: 1, max: 240}
	fs.Var(fps, "fps", "frames per `second`")
	return fps
}

func videoSendCmd(fs *pflag.FlagSet) func(context.Context, *cmdEnv) error {
	var a flowArgs
	var cfg flow.VideoConfig
	minRate, maxRate := rateValue{bps: 300_000}, rateValue{bps: 8_000_000}
	keyEvery := durationValue{d: 2 * time.Second, min: time.Millisecond}
	budget := durationValue{d: 15 * time.Millisecond, min: time.Millisecond}
	a.peerFlags(fs)
	a.ecnFlag(fs)
	fps := fpsFlag(fs)
	fs.Var(&minRate, "min-rate", "encoder's lowest target `rate`")
	fs.Var(&maxRate, "max-rate", "encoder's highest target `rate`")
	fs.Var(&keyEvery, "keyframe-every", "periodic keyframe `interval` (also on the receiver's PLI)")
	fs.Var(&budget, "budget", "send each frame within this `time`, or at the Prague rate if slower")
	fs.Uint64Var(&cfg.Seed, "seed", 1, "seed of the frame-size noise")
	a.outputFlags(fs, 30*time.Second, "send", true)
	return func(ctx context.Context, env *cmdEnv) error {
		if err := a.checkECN(); err != nil {
			return err
		}
		if maxRate.bps < minRate.bps {
			return usagef("--max-rate %s is below --min-rate %s", maxRate.String(), minRate.String())
		}
		conn, peer, err := a.dialUDP()
		if err != nil {
			return err
		}
		defer conn.Close()
		out := newFlowOut(env.stdout, a.json, a.label)
		cfg.ECN, cfg.FPS, cfg.MinRate, cfg.MaxRate = a.ecn, fps.n, minRate.bps, maxRate.bps
		cfg.KeyframeEvery, cfg.FrameBudget = keyEvery.d, budget.d
		cfg.Duration, cfg.Interval, cfg.Label = a.duration.d, a.every.d, a.label
		s, err := flow.VideoSend(ctx, conn, peer, cfg, out.interval)
		out.senderSummary("video-send", s.SenderSummary, "frames", s.Frames, "keyframes", s.Keyframes, "plis", s.PLIs, "flushes", s.Flushes)
		return err
	}
}

func videoRecvCmd(fs *pflag.FlagSet) func(context.Context, *cmdEnv) error {
	var a flowArgs
	var cfg flow.VideoConfig
	playout := durationValue{d: 80 * time.Millisecond, min: time.Millisecond}
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
		cfg.ECN, cfg.FPS, cfg.Playout = a.ecn, fps.n, playout.d
		cfg.Duration, cfg.Interval, cfg.Label = a.duration.d, a.every.d, a.label
		s, err := flow.VideoRecv(ctx, conn, cfg, out.interval)
		out.videoSummary(s)
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
		out := newFlowOut(env.stdout, a.json, a.label)
		s, err := flow.BulkFetch(ctx, conn, a.duration.d, out.interval)
		out.summary("bulk", "bytes", s.Bytes, "duration_s", s.Duration.Seconds(), "goodput_bps", s.GoodputBps)
		return err
	}
}

// probeECN maps --ecn for probes to a codepoint.
var probeECN = map[string]aqm.ECN{
	"l4s": aqm.ECT1, "ect1": aqm.ECT1, "classic": aqm.NotECT, "not-ect": aqm.NotECT, "ect0": aqm.ECT0, "ce": aqm.CE,
}

func probeCmd(fs *pflag.FlagSet) func(context.Context, *cmdEnv) error {
	var a flowArgs
	every := durationValue{d: 10 * time.Millisecond, min: 100 * time.Microsecond}
	a.listenFlag(fs)
	a.peerFlags(fs)
	fs.StringVar(&a.ecn, "ecn", "l4s", "probe `codepoint`: l4s (ECT(1)), classic (Not-ECT), ect0 or ce")
	fs.Var(&every, "every", "send one probe per `period`")
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
		e, ok := probeECN[strings.ToLower(a.ecn)]
		if !ok {
			return usagef("--ecn %q: want l4s, classic, ect0 or ce", a.ecn)
		}
		conn, peer, err := a.dialUDP()
		if err != nil {
			return err
		}
		defer conn.Close()
		out := newFlowOut(env.stdout, a.json, a.label)
		s, err := flow.Probe(ctx, conn, peer, e, every.d, a.duration.d, out.interval)
		rtt := dist.Summarise(dist.Millis(s.RTT))
		out.summary("probe", "ecn", s.ECN, "sent", s.Sent, "received", s.Received, "lost", s.Lost,
			"forward_ce", s.ForwardCE, "return_ce", s.ReturnCE,
			"rtt_p50_ms", rtt.P50, "rtt_p95_ms", rtt.P95, "rtt_p99_ms", rtt.P99, "rtt_max_ms", rtt.Max)
		return err
	}
}

// flowOut prints interval reports and summaries as text or JSON lines.
type flowOut struct {
	w     io.Writer
	json  bool
	label string
}

func newFlowOut(w io.Writer, asJSON bool, label string) *flowOut {
	return &flowOut{w: w, json: asJSON, label: label}
}

func (o *flowOut) interval(iv flow.Interval) {
	if o.json {
		b, _ := json.Marshal(iv)
		o.w.Write(append(b, '\n'))
		return
	}
	var b strings.Builder
	fmt.Fprintf(&b, "[%s] %7.2f s", iv.Flow, iv.T)
	if iv.Label != "" {
		fmt.Fprintf(&b, " %s", iv.Label)
	}
	if iv.SentBps > 0 {
		fmt.Fprintf(&b, "  sent %7.3f Mbit/s", iv.SentBps/1e6)
	}
	if iv.Flow != "probe" {
		fmt.Fprintf(&b, "  goodput %7.3f Mbit/s", iv.GoodputBps/1e6)
	}
	if iv.RTTSamples > 0 {
		fmt.Fprintf(&b, "  RTT %.2f ms (p99 %.2f, max %.2f)", iv.RTTMeanMs, iv.RTTP99Ms, iv.RTTMaxMs)
	}
	if iv.Flow != "bulk" {
		fmt.Fprintf(&b, "  CE %.2f%%  loss %.2f%%", iv.CEFrac*100, iv.LossFrac*100)
	}
	if iv.PacingBps > 0 {
		fmt.Fprintf(&b, "  pacing %.3f Mbit/s  window %d pkts  alpha %.3f  %s", iv.PacingBps/1e6, iv.WindowPkts, iv.Alpha, iv.ECN)
	}
	if iv.TargetBps > 0 {
		fmt.Fprintf(&b, "  target %.3f Mbit/s  frames %d (key %d)", iv.TargetBps/1e6, iv.Frames, iv.Keyframes)
	}
	if iv.Flow == "video-recv" {
		fmt.Fprintf(&b, "  %.1f fps  late %d  undecodable %d  stalls %d (%.0f ms)  frame delay p50 %.1f ms",
			iv.FPS, iv.Late, iv.Undecodable, iv.Stalls, iv.StallMs, iv.FrameDelayP50)
	}
	if iv.PLIs > 0 {
		fmt.Fprintf(&b, "  PLI %d", iv.PLIs)
	}
	if iv.ErrorL4S {
		b.WriteString("  error_L4S")
	}
	b.WriteByte('\n')
	io.WriteString(o.w, b.String())
}

// summary prints the final figures: key, value pairs in order.
func (o *flowOut) summary(kind string, kv ...any) {
	if o.json {
		m := map[string]any{"flow": kind, "summary": true}
		if o.label != "" {
			m["label"] = o.label
		}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		b, _ := json.Marshal(m)
		o.w.Write(append(b, '\n'))
		return
	}
	var b strings.Builder
	fmt.Fprintf(&b, "[%s] summary:", kind)
	for i := 0; i+1 < len(kv); i += 2 {
		switch v := kv[i+1].(type) {
		case float64:
			fmt.Fprintf(&b, " %s=%.4g", kv[i], v)
		default:
			fmt.Fprintf(&b, " %s=%v", kv[i], v)
		}
	}
	b.WriteByte('\n')
	io.WriteString(o.w, b.String())
}

func (o *flowOut) senderSummary(kind string, s flow.SenderSummary, extra ...any) {
	rtt := dist.Summarise(dist.Millis(s.RTT))
	kv := []any{"duration_s", s.Duration.Seconds(), "packets_sent", s.PacketsSent, "goodput_bps", s.GoodputBps,
		"rtt_samples", len(s.RTT), "rtt_p50_ms", rtt.P50, "rtt_p95_ms", rtt.P95, "rtt_p99_ms", rtt.P99, "rtt_max_ms", rtt.Max,
		"ce_frac", s.CEFraction, "loss_frac", s.LossFraction, "ecn", s.ECN, "fell_back", s.FellBack, "timeouts", s.Timeouts}
	o.summary(kind, append(kv, extra...)...)
}

func (o *flowOut) receiverSummary(s flow.ReceiverSummary) {
	o.summary("prague-recv", "duration_s", s.Duration.Seconds(), "packets", s.Packets, "goodput_bps", s.GoodputBps,
		"not_ect", s.NotECT, "ect1", s.ECT1, "ect0", s.ECT0, "ce", s.CE,
		"ce_frac", s.CEFraction, "lost", s.Lost, "loss_frac", s.LossFraction, "error_l4s", s.ErrorL4S)
}

func (o *flowOut) videoSummary(s flow.VideoReceiverSummary) {
	ge25, zero := dist.FPSShares(s.FPS, 25)
	delay := dist.Summarise(dist.Millis(s.FrameDelay))
	o.summary("video-recv", "duration_s", s.Duration.Seconds(), "frames", s.Frames, "displayed", s.Displayed,
		"late", s.Late, "undecodable", s.Undecodable, "plis", s.PLIs,
		"share_fps_ge25", ge25, "share_fps_0", zero,
		"stalls", len(s.Stalls), "stall_rate", s.StallRate, "stalls_per_min", s.StallsPerMinute, "gaps_100ms", s.Gaps100ms,
		"frame_delay_p50_ms", delay.P50, "frame_delay_p99_ms", delay.P99, "loss_frac", s.LossFraction)
}
