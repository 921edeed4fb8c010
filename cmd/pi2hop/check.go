package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/spf13/pflag"

	"github.com/pi2hop/pi2hop/check"
	"github.com/pi2hop/pi2hop/internal/cli"
	"github.com/pi2hop/pi2hop/internal/clidoc"
	"github.com/pi2hop/pi2hop/internal/flagvalue"
)

// pi2hop check: is the path to a responder L4S-ready (ECN transitions both
// ways), and where does it change the field.

var checkCmd = &command{
	name:  "check",
	short: "is the path L4S-ready: ECN transitions both ways and the bottleneck's queue (against a check --serve responder)",
	usage: "check --to HOST[:PORT] [--trace] [--load=false | --duration D --max-rate R] [--json] | check --serve [ADDR]:PORT | check --box [--lan IF --wan IF --rate R]",
	long: "Sends trains of UDP probes in each ECN codepoint to a responder, which counts what they arrived as and " +
		"answers each with a probe of its own, and judges each direction: ECN passes, bleached, ECT(1) re-marked to ECT(0), " +
		"CE bleached, ECT dropped, mangled or ToS zeroed. Then (--load, on by default) it loads the path for --duration " +
		"with an L4S flow (Prague, ECT(1)) and a classic one (Not-ECT, loss-based) at once, never above --max-rate, and probes the " +
		"RTT in each codepoint: an L4S dual-queue AQM keeps the L4S RTT low while the classic one rises; one Classic-ECN queue " +
		"gives both the same; tail drop marks nothing and fills a buffer; no queue at all means the path was not saturated " +
		"(the bottleneck is beyond --max-rate, or elsewhere). --trace then sends probes with rising TTL and names the first hop " +
		"whose ICMP time-exceeded quote shows the field changed (Linux, root). --box checks this box as a bottleneck instead " +
		"(Linux, root): forwarding, a firewall that drops forwarded packets, offloads, another shaper, conntrack, CPU clock, CPU idle states, " +
		"wake-up latency; each problem with its fix. Exit status 0 when ECN passes both ways and the bottleneck is an L4S dual-queue " +
		"AQM (or the box has no problem), 1 when not (a path the load did not saturate is not shown ready: raise --max-rate, " +
		"or give --load=false to check the transitions alone), " +
		"2 on a usage error or when no responder answers. Runs on Linux, macOS and FreeBSD.",
	examples: []example{
		{"pi2hop check --serve :9332", "on the far end: answer probes until interrupted"},
		{"sudo pi2hop check --to far.example.net --trace --max-rate 50mbit", "ECN transitions both ways, the first hop that changes the field, and what the bottleneck does under load"},
		{"sudo pi2hop check --box --lan eth1 --wan eth0 --rate 10mbit", "is this box fit to be the bottleneck, with each fix"},
	},
	flags: checkFlags,
}

type checkArgs struct {
	to, serve string
	probes    flagvalue.IntRange
	every     flagvalue.Duration
	json      bool
	trace     bool
	box       bool
	lan, wan  string
	rate      flagvalue.Rate
	wakeFor   flagvalue.Duration
	load      bool
	duration  flagvalue.Duration
	maxRate   flagvalue.Rate
}

func checkFlags(fs *pflag.FlagSet) func(context.Context, *cmdEnv, []string) error {
	def := check.DefaultOptions()
	a := &checkArgs{
		probes:   flagvalue.IntRange{N: def.Probes, Min: 1, Max: 1000},
		every:    flagvalue.Duration{D: def.Interval, Min: time.Millisecond},
		duration: flagvalue.Duration{D: def.LoadDuration, Min: time.Second},
		maxRate:  flagvalue.Rate{BPS: def.MaxRate},
	}
	fs.StringVar(&a.to, "to", "", fmt.Sprintf("check the path to the responder at `HOST[:PORT]` (port %d when not given)", check.DefaultPort))
	fs.StringVar(&a.serve, "serve", "", "answer clients on `[ADDR]:PORT`, e.g. :9332 (IPv4 and IPv6) until interrupted")
	fs.Var(&a.probes, "probes", "send `N` probes per codepoint and direction")
	fs.Var(&a.every, "every", "send a probe once per `period`")
	clidoc.Annotate(fs, "every", clidoc.GroupAnnotation, "") // the probes' pace, not an output's repeat
	fs.BoolVar(&a.trace, "trace", false, "then find the hop that changes the field: probes with rising TTL, each router's quote of it (Linux, root)")
	fs.BoolVar(&a.load, "load", def.Load, "then load the path and tell what its bottleneck does: L4S dual queue, Classic-ECN, tail drop, not saturated")
	fs.Var(&a.duration, "duration", fmt.Sprintf("with --load: load the path for `period` (at most %v)", check.MaxLoadDuration))
	fs.Var(&a.maxRate, "max-rate", "with --load: never send more than `rate`, tc units (100mbit), probes and headers included")
	fs.BoolVar(&a.box, "box", false, "check this box as a bottleneck instead of a path (Linux, root)")
	fs.StringVar(&a.lan, "lan", "", "with --box: the LAN `interface` pi2hop is to forward from")
	fs.StringVar(&a.wan, "wan", "", "with --box: the WAN `interface` pi2hop is to forward to")
	fs.Var(&a.rate, "rate", "with --box: the `rate` pi2hop is to run at, tc units (10mbit): a slower shaper on --wan is a problem")
	a.wakeFor = flagvalue.Duration{D: 2 * time.Second, Min: 0}
	fs.Var(&a.wakeFor, "wake-for", "with --box: how long to measure the wake-up latency (`period`); 0 skips it")
	clidoc.JSONFlag(fs, &a.json, "print the result as one JSON object")
	return func(ctx context.Context, env *cmdEnv, args []string) error {
		if len(args) > 0 {
			return usagef("check: unexpected argument %q", args[0])
		}
		given := 0
		for _, g := range []bool{a.serve != "", a.to != "", a.box} {
			if g {
				given++
			}
		}
		if !a.box && (a.lan != "" || a.wan != "" || a.rate.BPS != 0) {
			return usagef("check: --lan, --wan and --rate go with --box")
		}
		if a.to == "" && a.trace {
			return usagef("check: --trace goes with --to")
		}
		if fs.Changed("duration") || fs.Changed("max-rate") {
			if a.to == "" || !a.load {
				return usagef("check: --duration and --max-rate go with --to and --load")
			}
		}
		if a.duration.D > check.MaxLoadDuration {
			return usagef("check: --duration %v: want at most %v", a.duration.D, check.MaxLoadDuration)
		}
		if a.maxRate.BPS < check.MinMaxRate {
			return usagef("check: --max-rate %s: want at least 1mbit (each flow needs 100kbit beside the probes)", a.maxRate.String())
		}
		switch {
		case given > 1:
			return usagef("check: give one of --to, --serve and --box")
		case a.box:
			return runCheckBox(ctx, env, a)
		case a.serve != "":
			return checkServe(ctx, env, a.serve)
		case a.to != "":
			return checkPath(ctx, env, a)
		}
		return usagef("check: want --to HOST[:PORT] (a client), --serve [ADDR]:PORT (a responder) or --box")
	}
}

func checkServe(ctx context.Context, env *cmdEnv, addr string) error {
	la, err := net.ResolveUDPAddr("udp", addr)
	if err != nil || la.Port == 0 {
		return usagef("check: --serve %q: want [ADDR]:PORT with a port, like :%d or [::1]:%d", addr, check.DefaultPort, check.DefaultPort)
	}
	conn, err := net.ListenUDP("udp", la)
	if err != nil {
		return fmt.Errorf("check --serve %s: %w", addr, err)
	}
	defer conn.Close()
	r, err := check.NewResponder(conn)
	if err != nil {
		return fmt.Errorf("check --serve: %w", err)
	}
	fmt.Fprintf(env.stdout, "check: answering on %v (Ctrl-C stops)\n", conn.LocalAddr())
	return r.Serve(ctx)
}

func checkPath(ctx context.Context, env *cmdEnv, a *checkArgs) error {
	opts := check.DefaultOptions()
	opts.Target, opts.Probes, opts.Interval = a.to, a.probes.N, a.every.D
	opts.Load, opts.LoadDuration, opts.MaxRate = a.load, a.duration.D, a.maxRate.BPS
	if a.load && !a.json {
		fmt.Fprintf(env.stderr, "check: ECN transitions, then %v of load under %s (Ctrl-C stops)\n", a.duration.D, a.maxRate.String())
	}
	r, err := check.Path(ctx, opts)
	var te *check.TargetError
	var ue *check.UnreachableError
	switch {
	case errors.As(err, &te):
		return usagef("check: --to %v", te)
	case errors.As(err, &ue):
		fmt.Fprintf(env.stderr, "pi2hop check: %v\n", ue)
		return &cli.ExitError{Code: 2}
	case err != nil:
		return fmt.Errorf("check: %w", err)
	}
	var tr *check.Trace
	if a.trace {
		o := check.DefaultTraceOptions()
		o.Peer, o.Sent = r.Peer, check.TraceCodepoint(r)
		if tr, err = check.RunTrace(ctx, o); err != nil {
			return fmt.Errorf("check: %w", err)
		}
	}
	if err := check.WritePath(env.stdout, r, tr, a.json); err != nil {
		return err
	}
	if !r.Ready() {
		return &cli.ExitError{Code: 1}
	}
	return nil
}

func runCheckBox(ctx context.Context, env *cmdEnv, a *checkArgs) error {
	if app.GOOS != "linux" {
		return &cli.PlatformError{Msg: "pi2hop check --box: needs Linux (forwarding, nftables, qdiscs)"}
	}
	fs, err := check.Box(ctx, check.BoxOptions{LAN: a.lan, WAN: a.wan, Rate: a.rate.BPS, WakeFor: a.wakeFor.D})
	if err != nil {
		return fmt.Errorf("check --box (run it as root): %w", err)
	}
	if err := check.WriteBox(env.stdout, fs, a.json); err != nil {
		return err
	}
	if check.Problems(fs) > 0 {
		return &cli.ExitError{Code: 1}
	}
	return nil
}
