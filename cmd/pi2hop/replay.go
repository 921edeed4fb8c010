package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/pi2hop/pi2hop/instance"
	"github.com/pi2hop/pi2hop/internal/clidoc"
	"github.com/pi2hop/pi2hop/internal/jsonline"
	"github.com/pi2hop/pi2hop/internal/tty"
	"github.com/pi2hop/pi2hop/invoker"
	"github.com/pi2hop/pi2hop/replay"
	"github.com/spf13/pflag"
)

// pi2hop replay: flags -> replay.Config -> replay.Engine.Run, printing a
// table (replay.Table) on a terminal, else each event as a JSON line
// (replay.JSONWriter) and a summary. The model and the event order are
// the replay package's.

var replayCmd = &command{
	name:  "replay",
	short: "run a packet trace (CSV or pcap) through the link and a queue discipline (--aqm) in virtual time",
	usage: "replay [flags] (--trace FILE | --pcap FILE [--pcap-out FILE])",
	long:  "On a terminal it prints a summary table; with --json, or when stdout is not a terminal (a pipe, a file), JSON lines: one per packet, per queue update and a summary (docs/json.md).",
	examples: []example{
		{"pi2hop replay --trace packets.csv --rate 10mbit --delay 10ms", "what DualPI2 would do to this trace, in virtual time"},
		{"pi2hop replay --pcap phone.pcapng --aqm fq_codel --pcap-out out.pcap", "a capture through fq_codel, the result as a capture"},
		{"pi2hop replay --trace packets.csv --aqm codel --target 10ms", "the trace through CoDel with a 10 ms target"},
	},
	flags: replayFlags,
}

type replayArgs struct {
	trace, pcap, pcapOut string
	tap                  string
	json                 bool
	link                 *linkFlags
	capture              *captureFlags
}

func replayFlags(fs *pflag.FlagSet) func(context.Context, *cmdEnv, []string) error {
	a := &replayArgs{}
	fs.StringVar(&a.trace, "trace", "", "CSV packet trace `FILE` (- = stdin): header time_ns,bytes,ecn[,flow][,dscp], ecn 0 Not-ECT, 1 ECT(1), 2 ECT(0), 3 CE; dscp 0..63 (45 NQB)")
	fs.StringVar(&a.pcap, "pcap", "", "capture `FILE` (- = stdin; pcap or pcapng, gzipped or not, as analyze reads) to replay: arrival = capture time since the first packet")
	fs.StringVar(&a.pcapOut, "pcap-out", "", "write the packets as they leave (after --delay, CE marks applied) to this pcap `FILE` (raw IP, ns timestamps)")
	fs.StringVar(&a.tap, "tap", "", "of a capture with several interfaces, the one to replay (`NAME`, e.g. up-in); default: of a pi2hop capture its first -in tap, the packets as they came to the hop")
	clidoc.JSONFlag(fs, &a.json, "JSON lines (each packet, each queue update, a summary) even on a terminal; off a terminal they are the default")
	a.link = addLinkFlags(fs, false)
	a.link.addProfileFlag()
	a.capture = addCaptureFlags(fs)
	return func(ctx context.Context, env *cmdEnv, args []string) error {
		return runReplay(ctx, env, a, args)
	}
}

func runReplay(ctx context.Context, env *cmdEnv, a *replayArgs, args []string) error {
	switch {
	case len(args) > 0:
		return usagef("replay: unexpected argument %q (name the input with --trace FILE or --pcap FILE)", args[0])
	case (a.trace == "") == (a.pcap == ""):
		return usagef("replay: give one input: --trace FILE (CSV) or --pcap FILE")
	case a.tap != "" && a.pcap == "":
		return usagef("replay: --tap needs --pcap: a CSV trace has no interfaces")
	case a.pcapOut != "" && a.pcap == "":
		return usagef("replay: --pcap-out needs --pcap: a CSV trace has no packet bytes to write")
	}
	linkCfg, spec, err := a.link.direction("")
	if err != nil {
		return configError("replay", err)
	}
	for _, w := range a.link.warnings() {
		fmt.Fprintf(env.stderr, "pi2hop: warning: %s\n", w)
	}
	if a.trace != "" && linkCfg.Fault.Match != 0 {
		return usagef("replay: --ecn-fault %s: proto=, sport= and dport= read the packets, and a CSV trace has no packet bytes: replay a capture with --pcap", linkCfg.Fault)
	}
	cfg := replay.Config{Link: linkCfg, Queue: spec, Seed: a.link.seed(), KeepFrames: a.pcapOut != "" || a.capture.path != ""}
	eng, err := replay.New(cfg)
	if err != nil {
		return usagef("replay: %v", err)
	}

	in, name, closeIn, err := openInput(a.trace+a.pcap, env.stdin)
	if err != nil {
		flag := "pcap"
		if a.trace != "" {
			flag = "trace"
		}
		return fmt.Errorf("--%s: %w", flag, err)
	}
	defer closeIn()
	var src replay.Source
	var capIn *replay.CaptureSource
	if a.trace != "" {
		src = replay.NewCSVSource(in, name)
	} else {
		if capIn, err = replay.NewCaptureSourceTap(in, name, a.tap); err != nil {
			var te *replay.TapError
			if errors.As(err, &te) {
				return usagef("replay: --tap: %s: %v", name, te)
			}
			return err
		}
		if _, note := capIn.Tap(); note != "" {
			fmt.Fprintf(env.stderr, "replay: %s\n", note)
		}
		src = capIn
	}

	out := bufio.NewWriterSize(env.stdout, 256<<10)
	table := replay.NewTable()
	handlers := []replay.Handler{table}
	if a.json || !tty.IsTerminal(env.stdout) {
		table, handlers = nil, []replay.Handler{replay.NewJSONWriter(out)}
	}

	// --capture: virtual time 0 is the input capture's first packet, or
	// the Unix epoch for a CSV trace.
	var start int64
	if capIn != nil {
		start = capIn.Start()
	}
	capt, err := a.capture.open("pi2hop replay of "+name, start)
	if err != nil {
		return usagef("replay: %v", err)
	}
	if capt != nil {
		defer capt.Close()
		handlers = append(handlers, replay.NewCaptureWriter(capt))
	}
	var pcapOut *replay.PcapWriter
	if a.pcapOut != "" {
		owner, err := invoker.FromEnv()
		if err != nil {
			return err
		}
		if pcapOut, err = replay.CreatePcap(a.pcapOut, owner, start, "--pcap-out"); err != nil {
			return err
		}
		handlers = append(handlers, pcapOut)
	}

	res, err := eng.Run(ctx, src, handlers...)
	if capIn != nil && err == nil { // an error already says what it found
		for _, w := range capIn.Warnings() {
			fmt.Fprintf(env.stderr, "replay: warning: %s\n", w)
		}
	}
	if err == nil {
		j := &jsonline.Line{}
		si := summaryInput(a, capIn)
		si.Queue = instance.QueueKnobs(spec)
		if line := replay.WriteSummary(j, &res, si, linkCfg, spec); table != nil {
			err = table.Write(out, &res, line, spec.Kind, si.Queue)
		} else {
			out.Write(line)
		}
		if ferr := out.Flush(); ferr != nil {
			err = fmt.Errorf("writing output: %w", ferr)
		}
	}
	if pcapOut != nil {
		if cerr := pcapOut.Close(); err == nil {
			err = cerr
		}
	}
	if capt != nil {
		if cerr := capt.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("--capture: %w", cerr)
		}
	}
	return err
}

// openInput opens a named input, "-" meaning stdin.
func openInput(path string, stdin io.Reader) (io.Reader, string, func(), error) {
	if path == "-" {
		return stdin, "stdin", func() {}, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, "", nil, err
	}
	return f, path, func() { f.Close() }, nil
}

// summaryInput is what the summary line says of the input (capIn, nil
// for a CSV trace) and settings.
func summaryInput(a *replayArgs, capIn *replay.CaptureSource) replay.SummaryInput {
	f, s := a.link, a.link.settings()
	si := replay.SummaryInput{Trace: a.trace, Pcap: a.pcap, Profile: f.profile.Val, Seed: f.seed(), MTU: f.mtuBytes()}
	if capIn != nil {
		si.Skipped, si.Clamped = capIn.Skipped(), capIn.Clamped()
	}
	if si.Profile != "" {
		si.Direction = f.dir.Val
	}
	if s.RateTrace != nil {
		si.RateTrace = *s.RateTrace
	}
	if s.Loss != nil {
		si.Loss = *s.Loss
	}
	return si
}
