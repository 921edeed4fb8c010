package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/spf13/pflag"

	"github.com/pi2hop/pi2hop/check"
	"github.com/pi2hop/pi2hop/internal/flagvalue"
)

// pi2hop check: is the path to a responder L4S-ready (ECN transitions both
// ways), and where does it change the field.

var checkCmd = &command{
	name:  "check",
	short: "is the path L4S-ready: ECN transitions both ways (against a check --serve responder)",
	usage: "check --to HOST[:PORT] [--trace] [--json] | check --serve [ADDR]:PORT",
	long: "Sends trains of UDP probes in each ECN codepoint to a responder, which counts what they arrived as and " +
		"answers each with a probe of its own, and judges each direction: ECN passes, bleached, ECT(1) re-marked to ECT(0), " +
		"CE bleached, ECT dropped, mangled or ToS zeroed. --trace then sends probes with rising TTL and names the first hop " +
		"whose ICMP time-exceeded quote shows the field changed (Linux, root). Exit status 0 when ECN passes both ways, 1 when not, " +
		"2 on a usage error or when no responder answers. Runs on Linux, macOS and FreeBSD.",
	flags: checkFlags,
}

type checkArgs struct {
	to, serve string
	probes    flagvalue.IntRange
	every     flagvalue.Duration
	json      bool
	trace     bool
}

func checkFlags(fs *pflag.FlagSet) func(context.Context, *cmdEnv, []string) error {
	def := check.DefaultOptions()
	a := &checkArgs{
		probes: flagvalue.IntRange{N: def.Probes, Min: 1, Max: 1000},
		every:  flagvalue.Duration{D: def.Interval, Min: time.Millisecond},
	}
	fs.StringVar(&a.to, "to", "", fmt.Sprintf("the responder's `HOST[:PORT]` (port %d when not given)", check.DefaultPort))
	fs.StringVar(&a.serve, "serve", "", "answer clients on `[ADDR]:PORT`, e.g. :9332 (IPv4 and IPv6) until interrupted")
	fs.Var(&a.probes, "probes", "probes per codepoint and direction (`N`)")
	fs.Var(&a.every, "every", "send a probe once per `period`")
	fs.BoolVar(&a.trace, "trace", false, "then find the hop that changes the field: probes with rising TTL, each router's quote of it (Linux, root)")
	jsonFlag(fs, &a.json, "print the result as one JSON object")
	return func(ctx context.Context, env *cmdEnv, args []string) error {
		if len(args) > 0 {
			return usagef("check: unexpected argument %q", args[0])
		}
		switch {
		case a.serve != "" && a.to != "":
			return usagef("check: --serve and --to: give one (a responder, or a client of one)")
		case a.serve != "":
			return checkServe(ctx, env, a.serve)
		case a.to != "":
			return checkPath(ctx, env, a)
		}
		return usagef("check: want --to HOST[:PORT] (a client) or --serve [ADDR]:PORT (a responder)")
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
	r, err := check.Path(ctx, opts)
	var te *check.TargetError
	var ue *check.UnreachableError
	switch {
	case errors.As(err, &te):
		return usagef("check: --to %v", te)
	case errors.As(err, &ue):
		fmt.Fprintf(env.stderr, "pi2hop check: %v\n", ue)
		return &exitError{2}
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
	if a.json {
		j := r.JSON()
		if tr != nil {
			tj := tr.JSON()
			j.Trace = &tj
		}
		b, err := json.Marshal(j)
		if err != nil {
			return err
		}
		fmt.Fprintf(env.stdout, "%s\n", b)
	} else {
		if err := r.WriteText(env.stdout); err != nil {
			return err
		}
		if tr != nil {
			if err := tr.WriteText(env.stdout); err != nil {
				return err
			}
			if note := check.TraceNote(r); note != "" {
				fmt.Fprintf(env.stdout, "  %s\n", note)
			}
		}
	}
	if !r.Ready() {
		return &exitError{1}
	}
	return nil
}
