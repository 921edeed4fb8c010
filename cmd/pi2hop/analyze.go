package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/pi2hop/pi2hop/analyze"
	"github.com/pi2hop/pi2hop/internal/clidoc"
	"github.com/pi2hop/pi2hop/internal/flagvalue"
	"github.com/pi2hop/pi2hop/internal/plotfile"
	"github.com/pi2hop/pi2hop/invoker"
	"github.com/pi2hop/pi2hop/pcap"
	"github.com/spf13/pflag"
)

// pi2hop analyze: read captures (pi2hop's annotated pcapng, or any pcap /
// pcapng from tcpdump) and report, per direction, class and flow, what the
// bottleneck did: ECN codepoints in and out, CE marks, drops, sojourn,
// invalid ECN transitions, IPv4 checksum errors and the DualPI2 coupling.

var analyzeCmd = &command{
	name:  "analyze",
	short: "report marks, drops, sojourn and ECN per flow and queue from pcap/pcapng captures",
	usage: "analyze [--json] [--plot DIR [--plot-format png,svg]] [--bin 1s] [--coupling 2] [--ingress FILE --egress FILE] [FILE...]",
	examples: []example{
		{"pi2hop analyze hop.pcapng", "marks, drops and sojourn per flow of a pi2hop capture"},
		{"pi2hop analyze --ingress before.pcap --egress after.pcap", "match packets across any bottleneck captured on both sides"},
		{"pi2hop analyze --plot plots --bin 100ms hop.pcapng", "plots with 100 ms bins"},
	},
	flags:    analyzeFlags,
	argFiles: true,
}

type analyzeArgs struct {
	json            bool
	plotDir         string
	plotFormat      plotfile.Formats
	bin             time.Duration
	coupling        float64
	ingress, egress []string
}

func analyzeFlags(fs *pflag.FlagSet) func(context.Context, *cmdEnv, []string) error {
	a := &analyzeArgs{}
	clidoc.JSONFlag(fs, &a.json, "print the full result as JSON instead of tables")
	fs.StringVar(&a.plotDir, "plot", "", "write plots of mark fraction and sojourn over time and the sojourn distribution into `DIR`")
	a.plotFormat = plotfile.DefaultFormats
	fs.Var(&a.plotFormat, "plot-format", plotFormatUsage)
	a.bin = time.Second
	fs.Var((*flagvalue.Time)(&a.bin), "bin", "`width` of each time bin of the series (mark fraction, sojourn percentiles per bin)")
	fs.Float64Var(&a.coupling, "coupling", 2, "DualPI2 coupling factor k for the check p_C = (p_L/k)²")
	fs.StringArrayVar(&a.ingress, "ingress", nil, "capture `FILE` taken before the bottleneck (tcpdump); packets are matched with --egress (repeatable)")
	fs.StringArrayVar(&a.egress, "egress", nil, "capture `FILE` taken after the bottleneck, matched with --ingress (repeatable)")
	return func(ctx context.Context, env *cmdEnv, args []string) error {
		return runAnalyze(env, a, args)
	}
}

func runAnalyze(env *cmdEnv, a *analyzeArgs, args []string) error {
	switch {
	case len(args)+len(a.ingress)+len(a.egress) == 0:
		return usagef("analyze: name at least one capture FILE (pcap or pcapng)")
	case (len(a.ingress) == 0) != (len(a.egress) == 0):
		return usagef("analyze: --ingress and --egress go together: give the captures from both sides of the bottleneck")
	}
	opt := analyze.Options{Bin: a.bin, CouplingK: a.coupling}
	if err := opt.Validate(); err != nil {
		var oe *pcap.OptionError
		if errors.As(err, &oe) {
			return usagef("analyze: --%s %s: must be %s", oe.Option, oe.Value, oe.Want)
		}
		return usagef("analyze: %v", err)
	}
	res, err := analyze.Analyze(analyze.Inputs(a.ingress, args, a.egress), opt)
	if err != nil {
		return fmt.Errorf("analyze: %w", err)
	}
	for _, w := range res.Warnings() {
		fmt.Fprintf(env.stderr, "analyze: warning: %s\n", w)
	}
	if a.json {
		err = res.WriteJSON(env.stdout)
	} else {
		err = res.WriteTable(env.stdout)
	}
	if err != nil {
		return err
	}
	if a.plotDir != "" {
		owner, err := invoker.FromEnv()
		if err != nil {
			return err
		}
		files, err := res.WritePlots(a.plotDir, a.plotFormat, owner)
		if err != nil {
			return fmt.Errorf("analyze: %w", err)
		}
		for _, f := range files {
			// stderr, so that --json output stays one JSON document.
			fmt.Fprintf(env.stderr, "wrote %s\n", f)
		}
	}
	return nil
}

// plotFormatUsage is lab's and analyze's --plot-format.
const plotFormatUsage = "plot file `formats`, comma-separated: png, svg or png,svg (each plot in each format)"
