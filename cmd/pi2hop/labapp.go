package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/pi2hop/pi2hop/internal/clidoc"
	"github.com/pi2hop/pi2hop/invoker"
	"github.com/pi2hop/pi2hop/testbed"
	"github.com/pi2hop/pi2hop/testbed/report"
	"github.com/spf13/pflag"
)

// labAppArgs are lab app's own flags; --rate, --rtt, --duration,
// --repeat, --seed and the output flags are lab's.
type labAppArgs struct {
	client, server string
	nat            bool
	variants       []string
	variant        []string // NAME:LINK-FLAGS
	cross          int
}

func addLabAppFlags(fs *pflag.FlagSet) *labAppArgs {
	a := &labAppArgs{}
	fs.StringVar(&a.client, "client", "", "app: the client `COMMAND`, a command line run with sh -c in the client namespace as you; $PI2HOP_SERVER is the server's address")
	fs.StringVar(&a.server, "server", "", "app: the server `COMMAND`, a command line run in the server namespace; $PI2HOP_CLIENT is the client's address")
	fs.BoolVar(&a.nat, "nat", false, "app: instead of --server: the client reaches the host's networks through the hop (NAT), so the app's real servers are beyond the bottleneck; with neither, the server namespace runs nothing but its kernel (ping's echo replies)")
	fs.StringSliceVar(&a.variants, "variants", testbed.DefaultAppVariants, "app: the paths to run the app through, in order: l4s (DualPI2), classic (DualPI2 behind an ECN bleacher), fifo (100 ms tail drop), and those of --variant")
	fs.StringArrayVar(&a.variant, "variant", nil, "app: another path, `NAME:FLAGS` with link flags as shell takes them (docsis:--aqm=docsis); repeat for more")
	fs.IntVar(&a.cross, "cross", testbed.DefaultAppCross, "app: classic cubic downloads beside the app, the same in every variant")
	for _, name := range []string{"client", "server", "nat", "variants", "variant", "cross"} {
		clidoc.Annotate(fs, name, clidoc.GroupAnnotation, "app")
	}
	return a
}

// runApp is `lab app`: the WWDC23 A/B for the user's own commands.
func (a *labArgs) runApp(ctx context.Context, env *cmdEnv, fs *pflag.FlagSet, args []string) error {
	if len(args) > 0 {
		return usagef("lab app: takes no words, got %q: quote the command lines of --client and --server", strings.Join(args, " "))
	}
	cfg, err := a.appConfig(fs)
	if err != nil {
		return err
	}
	// A command that cannot run is refused before anything is built.
	for _, c := range []struct{ flag, line string }{{"client", cfg.Client}, {"server", cfg.Server}} {
		if c.line == "" {
			continue
		}
		if err := testbed.CheckAppCommand(c.line, cfg.User); err != nil {
			return usagef("lab app: --%s: %v", c.flag, err)
		}
	}
	view, err := a.options()
	if err != nil {
		return usagef("lab: %v", err)
	}
	return runLabWith(ctx, env, labRun{name: a.name, what: "app", line: "pi2hop lab " + cfg.String(), planned: cfg.PlannedDuration(),
		do: func(ctx context.Context, opt testbed.Options) (*report.Report, error) {
			return testbed.RunApp(ctx, cfg, opt)
		}},
		a.out, a.plotFormat, a.capture, a.cpuLatency.D, view)
}

// appConfig turns lab app's command line into a resolved AppConfig.
func (a *labArgs) appConfig(fs *pflag.FlagSet) (testbed.AppConfig, error) {
	p := a.app
	for _, name := range []string{"bulk", "fifo-limit", "rtts", "windows", "warmup", "ecn-fault", "min-qlen-step", "quick"} {
		if fs.Changed(name) {
			return testbed.AppConfig{}, usagef("lab app: --%s is for the scenarios; give link flags to a --variant", name)
		}
	}
	if p.client == "" {
		return testbed.AppConfig{}, usagef("lab app: --client is required: the command line of your app's client")
	}
	cfg := testbed.AppConfig{Client: p.client, Server: p.server, NAT: p.nat, Cross: p.cross, Repeat: a.repeat}
	var err error
	if cfg.RateBps, cfg.RTT, cfg.Duration, cfg.Seed, err = a.runFlags(fs, "lab app"); err != nil {
		return cfg, err
	}
	u, err := invoker.FromEnv()
	if err != nil {
		return cfg, err
	}
	cfg.User = &u
	custom := map[string]string{}
	var order []string
	for _, v := range p.variant {
		name, flags, ok := strings.Cut(v, ":")
		if !ok {
			return cfg, usagef("lab app: --variant %q: want NAME:FLAGS, e.g. docsis:--aqm=docsis", v)
		}
		if _, dup := custom[name]; dup {
			return cfg, usagef("lab app: --variant %s given twice", name)
		}
		custom[name] = flags
		order = append(order, name)
	}
	names := p.variants
	if !fs.Changed("variants") && len(order) > 0 {
		names = append(append([]string(nil), names...), order...)
	}
	resolved, err := cfg.Resolve() // the rate and RTT the variants build on
	if err != nil && !strings.Contains(err.Error(), "no variants") {
		return cfg, usagef("lab app: %v", err)
	}
	for _, name := range names {
		flags, title, ok := testbed.BuiltinAppVariant(name, resolved.RateBps)
		if f, mine := custom[name]; mine {
			flags, title, ok = f, "link flags "+f, true
		}
		if !ok {
			return cfg, usagef("lab app: --variants: %q is neither l4s, classic, fifo nor a --variant's name", name)
		}
		v, err := appVariant(name, flags, resolved.RateBps, resolved.RTT)
		if err != nil {
			return cfg, usagef("lab app: variant %s: %v", name, err)
		}
		v.Title = title
		cfg.Variants = append(cfg.Variants, v)
	}
	if resolved, err = cfg.Resolve(); err != nil {
		return cfg, usagef("lab app: %v", err)
	}
	return resolved, nil
}

// appVariant parses a variant's link flags as shell's, over lab app's
// rate and RTT (half of it each way), and builds its hop configuration.
func appVariant(name, flags string, rateBps uint64, rtt time.Duration) (testbed.AppVariant, error) {
	fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	lf := addLinkFlags(fs, true)
	lf.addProfileFlag()
	args := append([]string{fmt.Sprintf("--rate=%dbit", rateBps), "--delay=" + (rtt / 2).String()}, strings.Fields(flags)...)
	if err := fs.Parse(args); err != nil {
		return testbed.AppVariant{}, err
	}
	if fs.NArg() > 0 {
		return testbed.AppVariant{}, fmt.Errorf("%q is not a link flag", fs.Arg(0))
	}
	c, err := lf.hopConfig(name)
	if err != nil {
		return testbed.AppVariant{}, err
	}
	return testbed.AppVariant{Name: name, Flags: flags, Up: c.Up, Down: c.Down}, nil
}
