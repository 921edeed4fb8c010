package flowcli

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/spf13/pflag"

	"github.com/pi2hop/pi2hop/flow"
	"github.com/pi2hop/pi2hop/internal/clidoc"
	"github.com/pi2hop/pi2hop/internal/flagvalue"
)

type runFunc = func(ctx context.Context, env Env) error

func pragueSend(fs *pflag.FlagSet, a *args) runFunc {
	var maxRate flagvalue.Rate
	mtu := flagvalue.IntRange{N: 1400, Min: 150, Max: 65507}
	a.peerFlags(fs)
	a.ecnFlag(fs)
	fs.Var(&maxRate, "max-rate", "never send faster than `rate`, tc units (10mbit); default no limit")
	fs.Var(&mtu, "mtu", "largest UDP payload in `bytes`")
	a.noValidationFlag(fs)
	a.outputFlags(fs, 10*time.Second, "send", true)
	return func(ctx context.Context, env Env) error {
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

func pragueRecv(fs *pflag.FlagSet, a *args) runFunc {
	a.listenFlag(fs)
	a.ecnFlag(fs)
	a.outputFlags(fs, 0, "receive", true)
	return func(ctx context.Context, env Env) error {
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

func videoSend(fs *pflag.FlagSet, a *args) runFunc {
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
	return func(ctx context.Context, env Env) error {
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

func videoRecv(fs *pflag.FlagSet, a *args) runFunc {
	var cfg flow.VideoConfig
	playout := flagvalue.Duration{D: 80 * time.Millisecond, Min: time.Millisecond}
	a.listenFlag(fs)
	a.ecnFlag(fs)
	fps := fpsFlag(fs)
	fs.Var(&playout, "playout", "playout `delay` after capture (needs clocks in sync across machines)")
	a.outputFlags(fs, 0, "receive", true)
	return func(ctx context.Context, env Env) error {
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

func bulk(fs *pflag.FlagSet, a *args) runFunc {
	a.listenFlag(fs)
	fs.StringVar(&a.to, "to", "", "server `ADDR:PORT` to fetch from (client)")
	cc := fs.String("cc", flow.DefaultBulkCC, "server's TCP congestion `control` (cubic, reno, bbr, ...)")
	a.outputFlags(fs, 10*time.Second, "fetch (client)", false)
	return func(ctx context.Context, env Env) error {
		if err := a.oneEnd(); err != nil {
			return err
		}
		if a.listen != "" {
			ln, err := net.Listen("tcp", a.listen)
			if err != nil {
				return err
			}
			fmt.Fprintf(env.Stderr, "bulk: serving on %v with %s\n", ln.Addr(), *cc)
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

func probe(fs *pflag.FlagSet, a *args) runFunc {
	every := flagvalue.Duration{D: 10 * time.Millisecond, Min: 100 * time.Microsecond}
	a.listenFlag(fs)
	a.peerFlags(fs)
	fs.StringVar(&a.ecn, "ecn", "l4s", "probe `codepoint`: l4s (ECT(1)), classic (Not-ECT), ect0 or ce")
	fs.Var(&every, "every", "send one probe per `period`")
	clidoc.Annotate(fs, "every", clidoc.GroupAnnotation, "") // the probes' pace, not an output's repeat
	a.outputFlags(fs, 10*time.Second, "probe (client)", false)
	return func(ctx context.Context, env Env) error {
		if err := a.oneEnd(); err != nil {
			return err
		}
		if a.listen != "" {
			conn, err := a.listenUDP()
			if err != nil {
				return err
			}
			defer conn.Close()
			fmt.Fprintf(env.Stderr, "probe: answering on %v\n", conn.LocalAddr())
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
