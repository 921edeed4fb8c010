package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/shaper"
	"github.com/spf13/pflag"
)

// pi2hop replay: run a packet trace through the link model and the queue
// discipline in virtual time and print what happened to every packet, and
// the PI state at each update while packets are in the system (queued, on
// the wire or in the delay line).
//
// Model (issue 2): virtual time starts at 0; the link sends one packet at
// a time; a packet leaves the queue when the link becomes free and leaves
// the link ceil(8·bytes·1e9/rate) ns later, then waits --delay in a FIFO
// delay line. At equal times the PI update comes first, then dequeue,
// then the arrival.

func init() {
	register(&command{
		name:  "replay",
		short: "run a packet trace (CSV or pcap) through the link and DualPI2 in virtual time",
		usage: "replay [flags] (--trace FILE | --pcap FILE [--pcap-out FILE])",
		flags: replayFlags,
	})
}

// Random streams derived from --seed: the AQM's rolls and the link's loss
// draw from separate PCG streams, so enabling loss leaves the AQM's
// decisions where they were.
const (
	streamAQM  = 1
	streamLoss = 2
)

type replayArgs struct {
	trace, pcap, pcapOut string
	link                 *linkFlags
	capture              *captureFlags
}

func replayFlags(fs *pflag.FlagSet) func(context.Context, *cmdEnv, []string) error {
	a := &replayArgs{}
	fs.StringVar(&a.trace, "trace", "", "CSV packet trace `FILE` (- = stdin): header time_ns,bytes,ecn[,flow], ecn 0 Not-ECT, 1 ECT(1), 2 ECT(0), 3 CE")
	fs.StringVar(&a.pcap, "pcap", "", "pcap or pcapng `FILE` (- = stdin) to replay: arrival = capture time since the first packet")
	fs.StringVar(&a.pcapOut, "pcap-out", "", "write the packets as they leave (after --delay, CE marks applied) to this pcap `FILE` (raw IP, ns timestamps)")
	a.link = addLinkFlags(fs, false)
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
	case a.pcapOut != "" && a.pcap == "":
		return usagef("replay: --pcap-out needs --pcap: a CSV trace has no packet bytes to write")
	}
	linkCfg, spec, err := a.link.direction("")
	if err != nil {
		return usagef("replay: %v", err)
	}

	var src packetSource
	var pcapIn *pcapTrace
	inName := a.trace + a.pcap
	in, name, closeIn, err := openInput(inName, env.stdin)
	if err != nil {
		return fmt.Errorf("--%s: %w", choose(a.trace != "", "trace", "pcap"), err)
	}
	defer closeIn()
	if a.trace != "" {
		src = newCSVTrace(in, name)
	} else {
		if pcapIn, err = newPCAPTrace(in, name); err != nil {
			return err
		}
		src = pcapIn
	}

	seed := a.link.seed()
	q, err := aqm.NewQueue(spec, rand.New(rand.NewPCG(seed, streamAQM)))
	if err != nil {
		return usagef("replay: %v", err)
	}
	link, err := shaper.NewLink(linkCfg, q, rand.New(rand.NewPCG(seed, streamLoss)))
	if err != nil {
		return usagef("replay: %v", err)
	}

	out := bufio.NewWriterSize(env.stdout, 256<<10)
	r := &replayer{link: link, q: q, w: out, events: make([]shaper.Event, 0, 256)}
	link.OnUpdate(r.onUpdate)

	// --capture: virtual time 0 is the input capture's first packet, or
	// the Unix epoch for a CSV trace.
	var offset int64
	if pcapIn != nil {
		offset = pcapIn.start.UnixNano()
	}
	capt, err := a.capture.open("pi2hop replay of "+name, offset)
	if err != nil {
		return usagef("replay: %v", err)
	}
	if capt != nil {
		r.capture = newReplayCapture(capt)
		r.keepFrames = true
		defer capt.Close()
	}

	var closePcap func() error
	if a.pcapOut != "" {
		if closePcap, err = r.openPcapOut(a.pcapOut, pcapIn); err != nil {
			return err
		}
	}
	err = r.run(ctx, src)
	if err == nil {
		if pcapIn != nil {
			r.in = inputCounts{skipped: pcapIn.skipped, clamped: pcapIn.clamped}
		}
		r.writeSummary(a, linkCfg, spec)
		err = r.err
		if ferr := out.Flush(); err == nil && ferr != nil {
			err = fmt.Errorf("writing output: %w", ferr)
		}
	}
	if closePcap != nil {
		if cerr := closePcap(); err == nil {
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

// openPcapOut starts --pcap-out: raw IP packets (what a TUN hop writes),
// ns timestamps. The returned function flushes and closes the file.
func (r *replayer) openPcapOut(path string, in *pcapTrace) (func() error, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("--pcap-out: %w", err)
	}
	bw := bufio.NewWriterSize(f, 256<<10)
	pw := pcapgo.NewWriterNanos(bw)
	if err := pw.WriteFileHeader(262144, layers.LinkTypeRaw); err != nil {
		f.Close()
		return nil, fmt.Errorf("--pcap-out %s: %w", path, err)
	}
	r.pcapOut, r.pcapName, r.pcapIn = pw, path, in
	r.keepFrames = true
	return func() error {
		err := bw.Flush()
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("--pcap-out %s: %w", path, err)
		}
		return nil
	}, nil
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

// queueCounts tally one queue's packets, as printed in the summary.
type queueCounts struct {
	arrivals, delivered, sent, bytes uint64
	marks, drops                     [aqm.NumReasons]uint64
	dequeued                         uint64
	sojournSum, sojournMax           int64
}

type inputCounts struct{ skipped, clamped int }

// piSample is one PI update, kept until it can be printed in time order
// with the packet events of the same Poll.
type piSample struct {
	at             int64
	prob           uint32
	delayC, delayL int64
}

// replayer drives one Link in virtual time and writes the JSON lines.
type replayer struct {
	link   *shaper.Link
	q      aqm.Queue
	w      *bufio.Writer
	j      jsonLine
	events []shaper.Event
	pis    []piSample

	// per-packet state, indexed by row, kept only for --pcap-out and --capture
	keepFrames bool
	frames     []tracePacket
	capture    *replayCapture
	pcapOut    *pcapgo.Writer
	pcapName   string
	pcapIn     *pcapTrace // its start is virtual time 0 in the output timestamps

	packets      int
	lastPoll     int64 // virtual time of the latest Poll
	firstArrival int64
	lastDep      int64
	piUpdates    int
	queues       [2]queueCounts // by Class: 0 C, 1 L (LLLL counts as L)
	in           inputCounts
	err          error // first output error
}

func queueIndex(c aqm.Class) int {
	if c == aqm.Classic {
		return 0
	}
	return 1
}

func (r *replayer) run(ctx context.Context, src packetSource) error {
	var p tracePacket
	for {
		ok, err := src.next(&p)
		if err != nil {
			return err
		}
		if !ok {
			break
		}
		if r.packets&1023 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		if r.packets == math.MaxInt32 {
			return fmt.Errorf("trace has more than %d packets", math.MaxInt32)
		}
		i := r.packets
		if r.packets == 0 {
			r.firstArrival = p.t
		}
		r.packets++
		if r.keepFrames {
			r.frames = append(r.frames, p)
		}
		if r.capture != nil {
			r.capture.arrival(&p)
		}
		r.advance(p.t)
		m := aqm.Meta{Len: p.len, Slot: int32(i), Flow: p.flow, ECN: p.ecn}
		v := r.link.Enqueue(m, p.t)
		qc := &r.queues[queueIndex(v.Class)]
		qc.arrivals++
		if v.Action == aqm.Drop {
			m.Arrival, m.Class = p.t, v.Class
			qc.drops[v.Reason]++
			r.writePacket(m, v, -1, -1)
			if r.capture != nil {
				r.capture.decided(&p, &shaper.Event{Meta: m, Verdict: v, At: p.t, Prob: r.q.Stats(p.t).Prob})
			}
			r.release(i)
		}
	}
	// Drain: run until the last packet has left the delay line. PI updates
	// keep coming forever, so stop as soon as nothing is pending.
	for r.link.Pending() > 0 {
		if err := ctx.Err(); err != nil {
			return err
		}
		next := r.link.Next()
		if next == math.MaxInt64 {
			return fmt.Errorf("replay: link reports %d packets pending but nothing to do", r.link.Pending())
		}
		r.pollTo(next)
	}
	return r.err
}

// advance does everything due at or before now. While packets are in the
// system it goes event by event, printing; once the system is empty it
// brings the PI up to now directly, without printing those updates: the
// queue jumps over idle updates at once, so long gaps in a trace (or
// absolute timestamps) cost nothing.
func (r *replayer) advance(now int64) {
	for r.link.Pending() > 0 {
		next := r.link.Next()
		if next > now {
			break
		}
		r.pollTo(next)
	}
	if r.link.Pending() == 0 {
		r.pollTo(r.lastPoll) // hand out events an Enqueue left for Poll
		r.q.Advance(now)
	}
	r.pollTo(now)
}

// pollTo polls the link at now and prints what happened in time order.
func (r *replayer) pollTo(now int64) {
	r.lastPoll = now
	r.events = r.link.Poll(now, r.events[:0])
	pi := 0
	for k := range r.events {
		ev := &r.events[k]
		for ; pi < len(r.pis) && r.pis[pi].at <= ev.At; pi++ {
			r.writePI(&r.pis[pi])
		}
		r.handle(ev)
	}
	for ; pi < len(r.pis); pi++ {
		r.writePI(&r.pis[pi])
	}
	r.pis = r.pis[:0]
}

// onUpdate records a PI update; Link calls it inside Poll, at the update's time.
func (r *replayer) onUpdate(at int64) {
	st := r.q.Stats(at)
	r.pis = append(r.pis, piSample{at: at, prob: st.Prob, delayC: st.DelayC, delayL: st.DelayL})
	r.piUpdates++
}

func (r *replayer) handle(ev *shaper.Event) {
	m, v := ev.Meta, ev.Verdict
	qc := &r.queues[queueIndex(m.Class)]
	sojourn := ev.Deq - m.Arrival
	qc.dequeued++
	qc.sojournSum += sojourn
	qc.sojournMax = max(qc.sojournMax, sojourn)
	dep := int64(-1)
	if v.Action != aqm.Drop || v.Reason == aqm.ReasonLoss {
		dep = ev.Dep
		r.lastDep = max(r.lastDep, ev.Dep)
	}
	switch v.Action {
	case aqm.Drop:
		qc.drops[v.Reason]++
	case aqm.Mark:
		qc.marks[v.Reason]++
		qc.delivered++
		qc.bytes += uint64(m.Len)
	default:
		qc.sent++
		qc.delivered++
		qc.bytes += uint64(m.Len)
	}
	r.writePacket(m, v, ev.Deq, dep)
	if r.capture != nil {
		r.capture.decided(&r.frames[m.Slot], ev)
	}
	if v.Action != aqm.Drop && r.pcapOut != nil {
		r.writeFrame(int(m.Slot), v.Action == aqm.Mark, ev.At)
	}
	r.release(int(m.Slot))
}

// release forgets a packet's bytes once its fate is known.
func (r *replayer) release(i int) {
	if r.frames != nil {
		r.frames[i].frame = nil
	}
}

// writePacket prints a "pkt" line; deq and dep < 0 print as null.
func (r *replayer) writePacket(m aqm.Meta, v aqm.Verdict, deq, dep int64) {
	j := &r.j
	j.begin("pkt")
	j.int("i", int64(m.Slot))
	j.int("t", m.Arrival)
	j.uint("flow", uint64(m.Flow))
	j.str("queue", m.Class.String())
	j.uint("ecn_in", uint64(m.ECN))
	ecnOut := m.ECN
	if v.Action == aqm.Mark && m.ECN != aqm.NotECT {
		ecnOut = aqm.CE
	}
	j.uint("ecn_out", uint64(ecnOut))
	j.str("verdict", v.Action.String())
	j.str("reason", v.Reason.String())
	if deq >= 0 {
		j.int("deq", deq)
		j.int("sojourn", deq-m.Arrival)
	} else {
		j.null("deq")
		j.null("sojourn")
	}
	if dep >= 0 {
		j.int("dep", dep)
	} else {
		j.null("dep")
	}
	r.write(j.end())
}

func (r *replayer) writePI(s *piSample) {
	j := &r.j
	j.begin("pi")
	j.int("t", s.at)
	j.uint("prob_raw", uint64(s.prob))
	j.float("prob", aqm.ProbFloat(s.prob), 9)
	j.int("delay_c", s.delayC)
	j.int("delay_l", s.delayL)
	r.write(j.end())
}

func (r *replayer) write(b []byte) {
	if _, err := r.w.Write(b); err != nil && r.err == nil {
		r.err = fmt.Errorf("writing output: %w", err)
	}
}

// writeFrame writes a delivered packet to --pcap-out at its release time,
// with CE set when the AQM marked it (IPv4 checksum updated by SetCE).
func (r *replayer) writeFrame(i int, marked bool, at int64) {
	p := &r.frames[i]
	if p.frame == nil {
		return
	}
	if marked {
		aqm.View(p.frame).SetCE()
	}
	ci := gopacket.CaptureInfo{
		Timestamp:     r.pcapIn.start.Add(time.Duration(at)),
		CaptureLength: p.capLen,
		Length:        p.origLen,
	}
	if err := r.pcapOut.WritePacket(ci, p.frame[:p.capLen]); err != nil && r.err == nil {
		r.err = fmt.Errorf("--pcap-out %s: %w", r.pcapName, err)
	}
}
