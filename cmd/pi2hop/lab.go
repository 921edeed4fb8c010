package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/pi2hop/pi2hop/internal/clidoc"
	"github.com/pi2hop/pi2hop/internal/flagvalue"
	"github.com/pi2hop/pi2hop/internal/plotfile"
	"github.com/pi2hop/pi2hop/invoker"
	"github.com/spf13/pflag"

	"github.com/pi2hop/pi2hop/instance"
	"github.com/pi2hop/pi2hop/instance/web"
	"github.com/pi2hop/pi2hop/internal/privs"
	"github.com/pi2hop/pi2hop/pcap"
	"github.com/pi2hop/pi2hop/shaper"
	"github.com/pi2hop/pi2hop/testbed"
	"github.com/pi2hop/pi2hop/testbed/report"
)

var labCmd = &command{
	name:  "lab",
	short: "run a lab scenario through the hop in network namespaces and write a report",
	usage: "lab [SCENARIO] [--quick] [--out DIR] [--duration D] [--rate R] [flags]  |  lab --cleanup [--name N]  |  lab compare DIR DIR... [--out DIR]",
	examples: []example{
		{"sudo pi2hop lab l4s-demo --quick", "the WWDC23 video call A/B in about two minutes, report in a new folder"},
		{"pi2hop lab --list", "the scenarios and their defaults"},
		{"sudo pi2hop lab app --client 'ping -Q 1 -i 0.02 -c 1000 $PI2HOP_SERVER' --variants l4s,classic", "your own app with and without L4S on the path (see lab app's flags)"},
	},
	flags:    labFlags,
	argWords: func() []string { return append(testbed.ScenarioNames(), "app", "compare") },
	linux:    "network namespaces, veth pairs, TUN devices",
}

// labArgs are lab's flags; zero values leave the scenario's defaults.
type labArgs struct {
	webFlags
	quick, list bool
	cleanup     bool
	name        string
	out         string
	link        instance.Settings // --rate, --seed, --ecn-fault, --min-qlen-step: the settings' rows, lab's defaults
	rtt         flagvalue.Duration
	duration    flagvalue.Duration
	warmup      flagvalue.Duration
	bulk        int
	fifoLimit   flagvalue.Count
	repeat      int
	rtts        flagvalue.Durations
	windows     []string
	capture     *captureFlags
	cpuLatency  flagvalue.CPULatency
	plotFormat  plotfile.Formats
	app         *labAppArgs
}

func labFlags(fs *pflag.FlagSet) func(ctx context.Context, env *cmdEnv, args []string) error {
	a := addLabFlags(fs)
	return func(ctx context.Context, env *cmdEnv, args []string) error {
		switch {
		case len(args) > 0 && args[0] == labCompareWord:
			return labCompare(env, fs, a, args[1:])
		case a.list:
			return listScenarios(env.stdout)
		case a.cleanup && len(args) > 0:
			return usagef("lab: --cleanup takes no scenario")
		case a.cleanup:
			return cleanupAs("lab", a.name, nil, env.stdout)
		}
		if err := instance.CheckName(a.name); err != nil {
			return usagef("lab: --name: %v", err)
		}
		if len(args) > 0 && args[0] == "app" {
			return a.runApp(ctx, env, fs, args[1:])
		}
		cfg, err := a.config(fs, args)
		if err != nil {
			return err
		}
		view, err := a.options()
		if err != nil {
			return usagef("lab: %v", err)
		}
		return runLab(ctx, env, a.name, cfg, a.out, a.plotFormat, a.capture, a.cpuLatency.D, view)
	}
}

// addLabFlags declares lab's flags on fs.
func addLabFlags(fs *pflag.FlagSet) *labArgs {
	a := &labArgs{rtt: flagvalue.Duration{Min: 0}, duration: flagvalue.Duration{Min: time.Second}, fifoLimit: flagvalue.Count{Min: 1, Max: 1 << 20}}
	fs.BoolVar(&a.quick, "quick", false, "short durations (as CI runs them): "+testbed.QuickWords())
	fs.StringVarP(&a.out, "out", "o", "", "report `folder` (default pi2hop-lab-<scenario>-<time> in the current folder)")
	fs.BoolVar(&a.list, "list", false, "list the scenarios with their defaults and exit")
	fs.StringVar(&a.name, "name", defaultLab, "instance `name`: the lab's state file (/run/pi2hop/NAME.json) and namespaces ("+instance.LabPrefix("NAME")+"...); two labs at once need two names")
	fs.BoolVar(&a.cleanup, "cleanup", false, cleanupUsage)
	a.webFlags.add(fs)
	fs.Var(instance.FlagWithDefault(&a.link, "rate", ""), "rate", "bottleneck `rate`, both directions, tc units (default: the scenario's, e.g. 10mbit)")
	d := testbed.DefaultRun() // the defaults help gives are the default scenario's, as --list gives them
	fs.Var(&a.rtt, "rtt", fmt.Sprintf("base round-trip `time`: half of it is added each way (default %v; bdp: see --rtts)", d.RTT))
	fs.Var(&a.duration, "duration", fmt.Sprintf("traffic `time` of each run, warm-up included (default %v for %s; each scenario's in --list)", d.Duration, d.Scenario))
	fs.Var(&a.warmup, "warmup", fmt.Sprintf("first part of each run left out of every figure (default %v for %s)", d.Warmup, d.Scenario))
	fs.IntVar(&a.bulk, "bulk", 0, fmt.Sprintf("l4s-demo: classic bulk downloads beside the call (default %d)", d.Bulk))
	fs.Var(&a.fifoLimit, "fifo-limit", fmt.Sprintf("l4s-demo: the FIFO run's tail-drop buffer in `packets` (default %d)", d.FIFOLimit))
	fs.Var(instance.FlagWithDefault(&a.link, "seed", fmt.Sprint(d.Seed)), "seed", "seed of the AQM's and the video frames' randomness")
	fs.IntVar(&a.repeat, "repeat", 1, "run each run `N` times, interleaved; the report gives each figure's median and min-max, judges the checks on the medians and plots the median run")
	fs.Var(instance.FlagWithDefault(&a.link, "ecn-fault", ""), "ecn-fault", "an ECN path fault on both directions of every run, as pi2hop shell's --ecn-fault (`KIND[,after][,...]`; default none)")
	fs.Var(instance.FlagWithDefault(&a.link, "min-qlen-step", fmt.Sprint(testbed.DefaultMinQlenStep)), "min-qlen-step", "DualPI2 min_qlen_step in `packets` (the kernel's default is 0; see pi2hop lab --list)")
	fs.Var(&a.rtts, "rtts", "bdp: comma-separated round-trip times, one run per RTT and window (default 15ms,50ms,120ms)")
	fs.StringSliceVar(&a.windows, "windows", nil, "bdp: comma-separated receiver windows in tc size units, a bare number in bytes as in tc (default 17520,6553500)")
	fs.Lookup("windows").Annotations = map[string][]string{clidoc.ArgAnnotation: {"SIZE,..."}}
	fs.Var(&a.cpuLatency, "cpu-latency", cpuLatencyUsage)
	a.plotFormat = plotfile.DefaultFormats
	fs.Var(&a.plotFormat, "plot-format", plotFormatUsage)
	a.capture = addCaptureFlags(fs)
	a.app = addLabAppFlags(fs)
	for name, group := range map[string]string{"rate": "link", "rtt": "link", "rtts": "link",
		"min-qlen-step": "queue", "fifo-limit": "queue", "out": "output", "list": "output"} {
		clidoc.Annotate(fs, name, clidoc.GroupAnnotation, group)
	}
	// The usage texts name each scenario's default; pflag's own "(default
	// 0s)" would contradict them.
	for _, name := range []string{"rtt", "duration", "warmup", "rtts"} {
		fs.Lookup(name).DefValue = ""
	}
	return a
}

// config turns the command line into a resolved testbed.Config.
func (a *labArgs) config(fs *pflag.FlagSet, args []string) (testbed.Config, error) {
	if len(args) > 1 {
		return testbed.Config{}, usagef("lab: one scenario at a time, got %q", strings.Join(args, " "))
	}
	cfg := testbed.Config{Scenario: testbed.DefaultScenario, Quick: a.quick}
	if len(args) == 1 {
		cfg.Scenario = args[0]
	}
	var err error
	if cfg.RateBps, cfg.RTT, cfg.Duration, cfg.Seed, err = a.runFlags(fs, "lab"); err != nil {
		return cfg, err
	}
	if fs.Changed("warmup") {
		cfg.Warmup = a.warmup.D
	}
	if a.link.ECNFault != nil {
		cfg.ECNFault = *a.link.ECNFault
	}
	cfg.MinQlenStep = a.link.MinQlenStep
	if fs.Changed("fifo-limit") {
		cfg.FIFOLimit = a.fifoLimit.N
	}
	cfg.Bulk, cfg.RTTs, cfg.Repeat = a.bulk, a.rtts.D, a.repeat
	for _, w := range a.windows {
		n, err := shaper.ParseSize(w)
		if err != nil {
			return cfg, usagef("lab: --windows %q: %v", w, err)
		}
		cfg.Windows = append(cfg.Windows, n)
	}
	if fs.Changed("bulk") && a.bulk <= 0 {
		return cfg, usagef("lab: --bulk %d: want 1..32 flows", a.bulk)
	}
	resolved, err := cfg.Resolve()
	if err != nil {
		return cfg, usagef("lab: %v", err)
	}
	return resolved, nil
}

// runFlags are the flags every lab run shares, 0 where not given (the
// run's default): the rate (unlimited refused), RTT, duration, seed, and
// --repeat checked. what is the command, for errors.
func (a *labArgs) runFlags(fs *pflag.FlagSet, what string) (rate uint64, rtt, dur time.Duration, seed uint64, err error) {
	if r := a.link.Rate; r != nil {
		if *r == 0 {
			return 0, 0, 0, 0, usagef("%s: --rate unlimited: the runs need a bottleneck rate", what)
		}
		rate = *r
	}
	if fs.Changed("rtt") {
		rtt = a.rtt.D
	}
	if fs.Changed("duration") {
		dur = a.duration.D
	}
	if a.link.Seed != nil {
		seed = *a.link.Seed
	}
	if a.repeat < 1 {
		return 0, 0, 0, 0, usagef("%s: --repeat %d: want 1 or more", what, a.repeat)
	}
	return rate, rtt, dur, seed, nil
}

func listScenarios(w io.Writer) error {
	for _, name := range testbed.ScenarioNames() {
		title, doc, _ := testbed.Describe(name)
		def, _ := testbed.Config{Scenario: name}.Resolve()
		quick, _ := testbed.Config{Scenario: name, Quick: true}.Resolve()
		suffix := ""
		if name == testbed.DefaultScenario {
			suffix = " (default)"
		}
		fmt.Fprintf(w, "%s%s: %s\n\n%s\n\n  defaults: %v\n  --quick:  %v\n\n", name, suffix, title, indent(doc, "  "), def, quick)
	}
	return nil
}

func indent(s, pre string) string {
	return pre + strings.ReplaceAll(s, "\n", "\n"+pre)
}

// defaultLab is the lab's instance name when none is given.
const defaultLab = "lab"

// runLab runs cfg with a progress bar on stderr, writes the report into
// out and prints the summary. The lab is instance name: the lifecycle
// gives it the privilege check, a state file and journal recording every
// namespace and device (so 'pi2hop lab --cleanup' removes what a killed
// lab left), the capture (one for the whole lab: each run's taps are
// named after it, l4s.up-in, classic.up-out, ..., so analyze reports the
// runs apart) and the teardown order; testbed builds a hop per run.
func runLab(ctx context.Context, env *cmdEnv, name string, cfg testbed.Config, out string, formats plotfile.Formats, cf *captureFlags, cpuLatency time.Duration, view *web.Options) error {
	return runLabWith(ctx, env, labRun{name: name, what: cfg.Scenario, line: "pi2hop lab " + cfg.String(), planned: cfg.PlannedDuration(),
		do: func(ctx context.Context, opt testbed.Options) (*report.Report, error) {
			return testbed.Run(ctx, cfg, opt)
		}},
		out, formats, cf, cpuLatency, view)
}

// labRun is what runLabWith runs: a scenario, or lab app.
type labRun struct {
	name, what, line string // instance name, scenario (the folder's name), start-up line
	planned          time.Duration
	do               func(context.Context, testbed.Options) (*report.Report, error)
}

// runLabWith is runLab for any lab run.
func runLabWith(ctx context.Context, env *cmdEnv, lr labRun, out string, formats plotfile.Formats, cf *captureFlags, cpuLatency time.Duration, view *web.Options) error {
	if out == "" {
		out = fmt.Sprintf("pi2hop-lab-%s-%s", lr.what, time.Now().Format("20060102-150405"))
	}
	if os.Geteuid() != 0 {
		return errors.New("lab: needs root to create network namespaces and TUN devices: run it with sudo (e.g. sudo make lab)")
	}
	if err := needPrivs("lab", "create network namespaces", privs.NetAdmin, privs.SysAdmin); err != nil {
		return err
	}
	// The report belongs to the user behind sudo; its folder must be new,
	// and that is checked now, not after the runs.
	owner, err := invoker.FromEnv()
	if err != nil {
		return err
	}
	if _, err := os.Lstat(out); err == nil {
		return usagef("lab: --out %s: already exists; name a new folder", out)
	}
	var rep *report.Report
	task := &instance.Task{Name: "lab", Info: []any{"scenario", lr.what, "capture", cf.path},
		Do: func(ctx context.Context, ienv *instance.Env) error {
			fmt.Fprintf(env.stderr, "%s; about %v\n", lr.line, lr.planned.Round(time.Second))
			for _, d := range testbed.Degradations(cpuLatency) {
				fmt.Fprintf(env.stderr, "pi2hop lab: %v\n", d)
			}
			progress := testbed.NewTerminalProgress(env.stderr, lr.planned)
			progress.Start()
			defer progress.Stop()
			opt := testbed.Options{Progress: progress, CPULatency: cpuLatency,
				Prefix: instance.LabPrefix(ienv.Name), Journal: ienv.Journal, HostSubnet: ienv.HostSubnet}
			if view != nil {
				var follow web.Following
				srv, err := web.Serve(*view, &follow)
				if err != nil {
					return err
				}
				defer srv.Close()
				fmt.Fprintf(env.stderr, "live view: %s\n", srv.URL())
				opt.OnHop = follow.Put
			}
			opt.Capture = ienv.Capture() // each run names its taps (l4s.up-in, ...)
			var err error
			rep, err = lr.do(ctx, opt)
			return err
		}}
	err = instance.Run(ctx, instance.Options{Name: lr.name, Command: "lab", Stderr: env.stderr,
		Capture: func() (*pcap.Capture, error) { return openCapture(cf, lr.line) },
	}, task)
	if err != nil {
		if ctx.Err() != nil {
			fmt.Fprintln(env.stderr, "pi2hop lab: interrupted; its namespaces, devices and flows are gone")
		}
		return fmt.Errorf("lab %s: %w", lr.what, err)
	}
	if err := rep.Write(out, formats, owner); err != nil {
		return fmt.Errorf("lab %s: writing the report: %w", lr.what, err)
	}
	fmt.Fprintln(env.stdout)
	for _, t := range rep.Summary() {
		if err := t.Text(env.stdout); err != nil {
			return err
		}
	}
	abs, _ := filepath.Abs(out)
	fmt.Fprintf(env.stdout, "Report: %s (report.md, report.json, summary.csv, %d plot files, %s); took %v\n",
		filepath.Join(abs, "report.md"), len(rep.Plots), formats, time.Duration(rep.ElapsedS*float64(time.Second)).Round(time.Second))
	return nil
}
