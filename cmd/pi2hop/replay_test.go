package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// runCLI runs pi2hop in-process with stdin and returns stdout.
func runCLI(t testing.TB, stdin string, args ...string) (string, error) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	err := Run(context.Background(), args, strings.NewReader(stdin), &stdout, &stderr)
	return stdout.String(), err
}

// outLine is any replay output line; nullable fields are pointers.
type outLine struct {
	Type    string `json:"type"`
	I       int    `json:"i"`
	T       int64  `json:"t"`
	Flow    uint32 `json:"flow"`
	Queue   string `json:"queue"`
	ECNIn   int    `json:"ecn_in"`
	ECNOut  int    `json:"ecn_out"`
	Fault   string `json:"fault"`
	Verdict string `json:"verdict"`
	Reason  string `json:"reason"`
	Deq     *int64 `json:"deq"`
	Sojourn *int64 `json:"sojourn"`
	Dep     *int64 `json:"dep"`

	ProbRaw uint32  `json:"prob_raw"`
	Prob    float64 `json:"prob"`
	DelayC  int64   `json:"delay_c"`
	DelayL  int64   `json:"delay_l"`
}

type summaryQueue struct {
	Arrivals, Delivered, Sent, Marked, Dropped uint64
	StepMarks                                  uint64 `json:"step_marks"`
	Drops                                      map[string]uint64
	Marks                                      map[string]uint64
}

type summaryLine struct {
	Packets       int
	LastDeparture int64 `json:"last_departure"`
	Busy          int64
	Utilisation   float64
	MaxQ          uint32 `json:"maxq"`
	Queues        map[string]summaryQueue
	Config        map[string]any
	ECNFaults     map[string]uint64 `json:"ecn_faults"`
}

// replayOut is a replay's output, split by line type.
type replayOut struct {
	pkts    []outLine // in output order
	byRow   map[int]outLine
	pis     []outLine
	summary summaryLine
}

func parseReplay(t testing.TB, out string) replayOut {
	t.Helper()
	r := replayOut{byRow: map[int]outLine{}}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	for n, l := range lines {
		var o outLine
		if err := json.Unmarshal([]byte(l), &o); err != nil {
			t.Fatalf("line %d %q: %v", n+1, l, err)
		}
		switch o.Type {
		case "pkt":
			r.pkts = append(r.pkts, o)
			if _, dup := r.byRow[o.I]; dup {
				t.Fatalf("packet %d printed twice", o.I)
			}
			r.byRow[o.I] = o
		case "pi":
			r.pis = append(r.pis, o)
		case "summary":
			if n != len(lines)-1 {
				t.Fatalf("summary on line %d of %d, want last", n+1, len(lines))
			}
			if err := json.Unmarshal([]byte(l), &r.summary); err != nil {
				t.Fatal(err)
			}
		default:
			t.Fatalf("line %d: unknown type %q", n+1, o.Type)
		}
	}
	if r.summary.Packets != len(r.byRow) {
		t.Fatalf("summary counts %d packets, %d printed", r.summary.Packets, len(r.byRow))
	}
	return r
}

func replayCSV(t testing.TB, trace string, args ...string) replayOut {
	t.Helper()
	out, err := runCLI(t, trace, append([]string{"replay", "--trace", "-"}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	return parseReplay(t, out)
}

// want is the expected fate of one packet; -1 means null.
type want struct {
	queue, verdict, reason string
	ecnOut                 int
	deq, dep               int64
}

func checkPackets(t *testing.T, got replayOut, wants []want) {
	t.Helper()
	if len(got.byRow) != len(wants) {
		t.Fatalf("%d packets in output, want %d", len(got.byRow), len(wants))
	}
	for i, w := range wants {
		p := got.byRow[i]
		nullable := func(v *int64) int64 {
			if v == nil {
				return -1
			}
			return *v
		}
		deq, dep, soj := nullable(p.Deq), nullable(p.Dep), nullable(p.Sojourn)
		if p.Queue != w.queue || p.Verdict != w.verdict || p.Reason != w.reason || p.ECNOut != w.ecnOut || deq != w.deq || dep != w.dep {
			t.Errorf("packet %d: queue %s %s %q ecn_out %d deq %d dep %d\n\twant queue %s %s %q ecn_out %d deq %d dep %d",
				i, p.Queue, p.Verdict, p.Reason, p.ECNOut, deq, dep, w.queue, w.verdict, w.reason, w.ecnOut, w.deq, w.dep)
		}
		if (deq < 0) != (soj < 0) || deq >= 0 && soj != deq-p.T {
			t.Errorf("packet %d: sojourn %d, want deq-t = %d", i, soj, deq-p.T)
		}
	}
}

// TestReplayTiming: at 10 Mbit/s a 1500-byte packet takes 1.2 ms. Three
// L4S packets arriving together leave at 0, 1.2, 2.4 ms; the second and
// third have waited more than the 1 ms step threshold and are CE-marked.
// Classic packets queue behind them; the delay line does not change deq/dep.
func TestReplayTiming(t *testing.T) {
	trace := "time_ns,bytes,ecn,flow\n0,1500,1,1\n0,1500,1,1\n0,1500,1,1\n100000,1500,2,2\n200000,1000,0,3\n"
	wants := []want{
		{"L", "sent", "", 1, 0, 1_200_000},
		{"L", "marked", "step", 3, 1_200_000, 2_400_000},
		{"L", "marked", "step", 3, 2_400_000, 3_600_000},
		{"C", "sent", "", 2, 3_600_000, 4_800_000},
		{"C", "sent", "", 0, 4_800_000, 5_600_000},
	}
	for _, delay := range []string{"0s", "10ms"} {
		got := replayCSV(t, trace, "--rate", "10mbit", "--delay", delay)
		checkPackets(t, got, wants)
		s := got.summary
		if s.LastDeparture != 5_600_000 || s.Busy != 5_600_000 || s.Utilisation != 1 {
			t.Errorf("delay %s: last departure %d busy %d utilisation %v, want 5.6 ms, 5.6 ms, 1", delay, s.LastDeparture, s.Busy, s.Utilisation)
		}
		l, c := s.Queues["L"], s.Queues["C"]
		if l.Arrivals != 3 || l.Sent != 1 || l.Marked != 2 || l.StepMarks != 2 || c.Arrivals != 2 || c.Sent != 2 {
			t.Errorf("delay %s: queues %+v", delay, s.Queues)
		}
		if s.MaxQ != 3 {
			t.Errorf("maxq %d, want 3 (packets 1..3 queued when packet 4 arrives)", s.MaxQ)
		}
	}
}

// TestReplayStepStrict: at 12 Mbit/s a 1500-byte packet takes exactly 1 ms,
// so the second packet's sojourn equals the step threshold (not marked,
// the kernel's test is strict) and the third's exceeds it. With
// --step-thresh 0p the L-queue length left behind decides instead: the
// first packet leaves alone at t=0, then 2, 1 and 0 packets remain.
func TestReplayStepStrict(t *testing.T) {
	trace := "time_ns,bytes,ecn\n0,1500,1\n0,1500,1\n0,1500,1\n0,1500,1\n"
	checkPackets(t, replayCSV(t, trace, "--rate", "12mbit"), []want{
		{"L", "sent", "", 1, 0, 1_000_000},
		{"L", "sent", "", 1, 1_000_000, 2_000_000},
		{"L", "marked", "step", 3, 2_000_000, 3_000_000},
		{"L", "marked", "step", 3, 3_000_000, 4_000_000},
	})
	checkPackets(t, replayCSV(t, trace, "--rate", "12mbit", "--step-thresh", "0p"), []want{
		{"L", "sent", "", 1, 0, 1_000_000},
		{"L", "marked", "step", 3, 1_000_000, 2_000_000},
		{"L", "marked", "step", 3, 2_000_000, 3_000_000},
		{"L", "sent", "", 1, 3_000_000, 4_000_000},
	})
}

// TestReplayClassification: ECT(1) and CE go to L, Not-ECT and ECT(0) to
// C; with --ecn-mask any ECT(0) goes to L too.
func TestReplayClassification(t *testing.T) {
	trace := "time_ns,bytes,ecn\n0,100,0\n1000000,100,1\n2000000,100,2\n3000000,100,3\n"
	for _, tt := range []struct {
		mask  string
		queue string // by ECN 0..3
	}{{"l4s", "CLCL"}, {"any", "CLLL"}} {
		got := replayCSV(t, trace, "--ecn-mask", tt.mask)
		for i := range 4 {
			if q := got.byRow[i].Queue; q != tt.queue[i:i+1] {
				t.Errorf("--ecn-mask %s: ECN %d went to %s, want %s", tt.mask, i, q, tt.queue[i:i+1])
			}
			if got.byRow[i].ECNIn != i || got.byRow[i].ECNOut != i {
				t.Errorf("ECN %d: ecn_in %d ecn_out %d", i, got.byRow[i].ECNIn, got.byRow[i].ECNOut)
			}
		}
	}
}

// TestReplayFIFOTailDrop: the first packet goes on the wire at once, the
// next two fill a 2-packet FIFO, the fourth is refused (null deq/dep); the
// FIFO never marks, even ECT(1) waiting well over a millisecond.
func TestReplayFIFOTailDrop(t *testing.T) {
	trace := "time_ns,bytes,ecn\n0,1500,1\n0,1500,1\n0,1500,1\n0,1500,1\n5000000,1500,0\n"
	got := replayCSV(t, trace, "--aqm", "fifo", "--limit", "2", "--rate", "10mbit")
	checkPackets(t, got, []want{
		{"C", "sent", "", 1, 0, 1_200_000},
		{"C", "sent", "", 1, 1_200_000, 2_400_000},
		{"C", "sent", "", 1, 2_400_000, 3_600_000},
		{"C", "dropped", "limit", 1, -1, -1},
		{"C", "sent", "", 0, 5_000_000, 6_200_000},
	})
	c := got.summary.Queues["C"]
	if c.Arrivals != 5 || c.Dropped != 1 || c.Drops["limit"] != 1 || len(got.pis) != 0 {
		t.Errorf("summary C %+v, %d pi lines (FIFO has none)", c, len(got.pis))
	}
	// The refused packet is printed at its arrival, before packets that leave later.
	if got.pkts[0].I != 3 || got.pkts[1].I != 0 {
		t.Errorf("output order %d, %d: want the drop (t=0) before packet 0 leaves", got.pkts[0].I, got.pkts[1].I)
	}
}

// TestReplayPI: 20 Classic packets at t=0 on a 1 Mbit/s link (12 ms each)
// keep the C head's sojourn equal to t, so the PI updates follow the ramp
// aqm's TestRamp checks against the kernel's calculate_probability. PI lines stop once the last packet has left
// and are interleaved with packet lines in time order.
func TestReplayPI(t *testing.T) {
	var b strings.Builder
	b.WriteString("time_ns,bytes,ecn\n")
	for range 20 {
		b.WriteString("0,1500,2\n")
	}
	out, err := runCLI(t, b.String(), "replay", "--trace", "-", "--rate", "1mbit")
	if err != nil {
		t.Fatal(err)
	}
	got := parseReplay(t, out)
	if len(got.pis) < 2 {
		t.Fatalf("%d pi lines", len(got.pis))
	}
	first := got.pis[0]
	if first.T != 16_000_000 || first.ProbRaw != 220_437_500 || first.DelayC != 16_000_000 || first.DelayL != 0 {
		t.Errorf("first PI line %+v, want t 16ms prob_raw 220437500 delay_c 16ms", first)
	}
	if want := 220_437_500 / 4294967295.0; first.Prob < want-1e-9 || first.Prob > want+1e-9 {
		t.Errorf("prob %v, want %v", first.Prob, want)
	}
	last := got.pis[len(got.pis)-1]
	if last.T > got.summary.LastDeparture || last.T+16_000_000 <= got.summary.LastDeparture {
		t.Errorf("last PI at %d, last departure %d: want the last update before it", last.T, got.summary.LastDeparture)
	}
	// Time order: a pkt line is printed when its fate is settled (dep, or
	// the drop time), a pi line at its update.
	var prev int64
	for n, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var o outLine
		json.Unmarshal([]byte(l), &o)
		at := o.T
		switch {
		case o.Type == "pkt" && o.Dep != nil:
			at = *o.Dep
		case o.Type == "pkt" && o.Deq != nil:
			at = *o.Deq
		case o.Type == "summary":
			continue
		}
		if at < prev {
			t.Fatalf("line %d at %d after a line at %d", n+1, at, prev)
		}
		prev = at
	}
}

// TestReplayRateTrace: a mahimahi trace with one 1500-byte opportunity per
// ms (12 Mbit/s) drives the link: full-size packets leave 1 ms apart.
// The trace is read from a file this time.
func TestReplayRateTrace(t *testing.T) {
	dir := t.TempDir()
	mm := filepath.Join(dir, "12mbit.mahi")
	tr := filepath.Join(dir, "trace.csv")
	os.WriteFile(mm, []byte("1\n"), 0o644)
	os.WriteFile(tr, []byte("time_ns,bytes,ecn\n0,1500,0\n0,1500,0\n0,1500,0\n"), 0o644)
	out, err := runCLI(t, "", "replay", "--trace", tr, "--rate-trace", mm)
	if err != nil {
		t.Fatal(err)
	}
	got := parseReplay(t, out)
	for i := 1; i < 3; i++ {
		if d := *got.byRow[i].Dep - *got.byRow[i-1].Dep; d != 1_000_000 {
			t.Errorf("packets %d and %d leave %d ns apart, want 1 ms", i-1, i, d)
		}
	}
	if got.summary.Config["rate-trace"] != mm || got.summary.Config["trace"] != tr {
		t.Errorf("config %v: want the trace and rate trace file names", got.summary.Config)
	}
}

// TestReplayErrors: bad rows name the line and column; bad flags and
// missing inputs say what to give.
func TestReplayErrors(t *testing.T) {
	tests := []struct {
		trace string
		args  []string
		want  string
	}{
		{"time_ns,bytes,ecn\n0,1500,1\n5,1500,7\n", nil, `stdin:3: column "ecn": "7" is not an ECN value 0..3`},
		{"time_ns,bytes,ecn\n0,0,1\n", nil, `stdin:2: column "bytes": "0" is not a packet size 1..65535`},
		{"time_ns,bytes,ecn\n0,70000,1\n", nil, `stdin:2: column "bytes": "70000" is not a packet size`},
		{"time_ns,bytes,ecn\n-5,100,1\n", nil, `stdin:2: column "time_ns": "-5" is not a time in ns`},
		{"time_ns,bytes,ecn\n10,100,1\n# comment\n\n5,100,1\n", nil, `stdin:5: column "time_ns": 5 is before the previous row's 10`},
		{"time_ns,bytes,ecn,flow\n0,100,1,x\n", nil, `stdin:2: column "flow": "x" is not a flow id`},
		{"time_ns,bytes,ecn\n0,100\n", nil, `stdin:2: 2 fields, want 3 as in the header`},
		{"time,bytes,ecn\n", nil, `stdin:1: unknown column "time" in the header`},
		{"time_ns,bytes\n", nil, `stdin:1: header "time_ns,bytes" has no column "ecn"`},
		{"time_ns,bytes,ecn,ecn\n", nil, `stdin:1: column "ecn" appears twice`},
		{"", nil, `stdin: empty trace`},
		{"x", []string{"--rate", "10mb"}, `--rate "10mb": unknown unit "mb"`},
		{"x", []string{"--coupling", "0"}, `--coupling "0": must be in 1..255`},
		{"x", []string{"--classic-protection", "101"}, `--classic-protection "101": must be in 0..100%`},
		{"x", []string{"--step-thresh", "x"}, `--step-thresh "x": want a duration like 1ms or a packet count like 3p`},
		{"x", []string{"--typical-rtt", "30ms", "--max-rtt", "20ms"}, `--max-rtt 20ms --typical-rtt 30ms: `},
		{"x", []string{"--tupdate", "10s"}, `--tupdate: 10s not in 1µs..`},
		{"x", []string{"--pcap", "x.pcap"}, "give one input"},
		{"x", []string{"--pcap-out", "x.pcap"}, "--pcap-out needs --pcap"},
		{"x", []string{"extra"}, `unexpected argument "extra"`},
		{"x", []string{"--bogus"}, "unknown flag: --bogus"},
	}
	for _, tt := range tests {
		_, err := runCLI(t, tt.trace, append([]string{"replay", "--trace", "-"}, tt.args...)...)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q %v: error %v, want %q", tt.trace, tt.args, err, tt.want)
		}
	}
	_, err := runCLI(t, "", "replay")
	if err == nil || !strings.Contains(err.Error(), "give one input") {
		t.Errorf("no input: %v", err)
	}
}

// TestReplayDropLines: a drop's line has the times the packet reached:
// refused at enqueue, none; dropped by the AQM at dequeue, deq only; lost
// on the link, deq and dep.
func TestReplayDropLines(t *testing.T) {
	got := replayCSV(t, "time_ns,bytes,ecn\n0,1500,1\n0,1500,1\n0,1500,1\n", "--aqm", "fifo", "--limit", "1", "--loss", "100%")
	checkPackets(t, got, []want{
		{"C", "dropped", "loss", 1, 0, 1_200_000},
		{"C", "dropped", "loss", 1, 1_200_000, 2_400_000},
		{"C", "dropped", "limit", 1, -1, -1},
	})
	// Not-ECT at twice the link's rate: DualPI2 drops at dequeue.
	var b strings.Builder
	b.WriteString("time_ns,bytes,ecn\n")
	for i := range 3000 {
		b.WriteString(strconv.Itoa(i*600_000) + ",1500,0\n")
	}
	n := 0
	for _, p := range replayCSV(t, b.String()).pkts {
		if p.Verdict != "dropped" {
			continue
		}
		n++
		if p.Deq == nil || p.Dep != nil || *p.Sojourn != *p.Deq-p.T || (p.Reason != "classic" && p.Reason != "overload") {
			t.Fatalf("dequeue drop %+v: want deq and sojourn, dep null", p)
		}
	}
	if n == 0 {
		t.Fatal("no drop at dequeue: the test checks nothing")
	}
}

// TestReplayECNFault: each packet line names the fault that acted on it
// (ecn_in as it came, ecn_out as it left), the summary counts them by
// kind and names the spec. drop-ect before the queue refuses the
// ECN-capable packets with reason ecn_fault; ect1-to-ect0 before the
// queue sends the ECT(1) packet to the C queue.
func TestReplayECNFault(t *testing.T) {
	trace := "time_ns,bytes,ecn\n0,100,0\n1000000,100,1\n2000000,100,2\n3000000,100,3\n"
	for _, tt := range []struct {
		spec   string
		ecnOut [4]int
		fault  [4]string
		queue  string
		drops  uint64
	}{
		{"none", [4]int{0, 1, 2, 3}, [4]string{"none", "none", "none", "none"}, "CLCL", 0},
		{"ect1-to-ect0", [4]int{0, 2, 2, 3}, [4]string{"none", "ect1-to-ect0", "none", "none"}, "CCCL", 0},
		{"bleach,after", [4]int{0, 0, 0, 0}, [4]string{"none", "bleach", "bleach", "bleach"}, "CLCL", 0},
		{"ce-bleach,after=2p", [4]int{0, 1, 2, 1}, [4]string{"none", "none", "none", "ce-bleach"}, "CLCL", 0},
		{"drop-ect", [4]int{0, 1, 2, 3}, [4]string{"none", "drop-ect", "drop-ect", "drop-ect"}, "C???", 3},
	} {
		got := replayCSV(t, trace, "--ecn-fault", tt.spec)
		var acted uint64
		for i := range 4 {
			p := got.byRow[i]
			if p.ECNIn != i || p.ECNOut != tt.ecnOut[i] || p.Fault != tt.fault[i] || (tt.queue[i] != '?' && p.Queue != tt.queue[i:i+1]) {
				t.Errorf("%s: packet %d ecn_in %d ecn_out %d fault %q queue %s; want %d %d %q %c",
					tt.spec, i, p.ECNIn, p.ECNOut, p.Fault, p.Queue, i, tt.ecnOut[i], tt.fault[i], tt.queue[i])
			}
			if p.Fault != "none" {
				acted++
			}
		}
		var counted, drops uint64
		for _, n := range got.summary.ECNFaults {
			counted += n
		}
		for _, q := range got.summary.Queues {
			drops += q.Drops["ecn_fault"]
		}
		if counted != acted || drops != tt.drops || got.summary.Config["ecn-fault"] != tt.spec {
			t.Errorf("%s: summary counts %v (%d acted), ecn_fault drops %d (want %d), config %v", tt.spec, got.summary.ECNFaults, acted, drops, tt.drops, got.summary.Config["ecn-fault"])
		}
	}
}
