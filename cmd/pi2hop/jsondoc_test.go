package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/flow"
	"github.com/pi2hop/pi2hop/hop"
	"github.com/pi2hop/pi2hop/instance"
	"github.com/pi2hop/pi2hop/internal/connlimit"
	"github.com/pi2hop/pi2hop/internal/jsondoc"
	"github.com/pi2hop/pi2hop/lan"
	"github.com/pi2hop/pi2hop/pcap"
	"github.com/pi2hop/pi2hop/pcap/pcaptest"
	"github.com/pi2hop/pi2hop/rtt"
)

// jsonOutput is one JSON document a command printed, and the object of
// docs/json.md that documents it.
type jsonOutput struct {
	what, root string
	data       []byte
}

// readSchema parses docs/json.md.
func readSchema(t *testing.T) *jsondoc.Schema {
	t.Helper()
	page, err := os.ReadFile("../../docs/json.md")
	if err != nil {
		t.Fatal(err)
	}
	s, err := jsondoc.Parse(page, "docs/json.md")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestJSONOutputsMatchDocs runs or builds every JSON output of the binary
// (stats from rows of each queue kind, replay of a CSV trace with each
// kind and of a capture, analyze of a hop's capture) and checks each
// against docs/json.md: a field the page lacks, a documented field the
// output lacks, or a value of another type fails, naming the table to fix.
// flow --json's lines come from its reporter fed every kind of flow. The
// lab's report.json is checked by testbed/report's tests.
func TestJSONOutputsMatchDocs(t *testing.T) {
	schema := readSchema(t)
	var outs []jsonOutput
	outs = append(outs, statsOutputs(t)...)
	outs = append(outs, statsFlowsOutputs(t)...)
	outs = append(outs, replayOutputs(t)...)
	outs = append(outs, analyzeOutputs(t)...)
	outs = append(outs, flowOutputs(t)...)
	outs = append(outs, profilesOutput(t))
	for _, o := range outs {
		for _, e := range schema.Check(o.what, o.root, o.data) {
			t.Error(e)
		}
	}
}

// statsOutputs are stats --json snapshots: one per queue kind (each with
// its own xstats), with a wake-up probe and a share's clients.
func statsOutputs(t *testing.T) []jsonOutput {
	var outs []jsonOutput
	for _, kind := range aqm.Kinds {
		spec, _ := aqm.DefaultSpec(kind)
		snap := &hop.Snapshot{Name: "pi2hop", Running: true}
		for _, d := range []hop.Dir{hop.Up, hop.Down} {
			s := snap.Dir(d)
			s.Dir, s.Kind, s.Spec, s.Rate, s.Bps, s.Delay = d, kind, spec, "10mbit", 10_000_000, int64(10*time.Millisecond)
			s.Queue.Kind = kind
			s.Loss, s.Jitter = "1%", "2ms normal"
			s.Taken, s.Elapsed, s.In, s.CPU = time.Unix(1_800_000_000, 0), int64(time.Second), 10, 1000
			s.SojournL.Add(1_000_000)
			s.Lateness.Add(5000)
		}
		rows := [2]hop.StatsRow{snap.Up.Row(nil), snap.Down.Row(nil)}
		probe := &hop.WakeProbeRow{RealTime: true, CPUs: 2, PeriodUs: 1000, WorstLate: 40}
		clients := []lan.Client{{Lease: lan.Lease{MAC: "02:00:00:00:00:01", Addr: netip.MustParseAddr("10.254.1.10"), Hostname: "phone",
			Expiry: time.Unix(1_800_000_600, 0)}, Addrs6: []netip.Addr{netip.MustParseAddr("fd00::10")}, Up: 1000, Down: 2000}}
		conns := &instance.ConnStats{Control: connlimit.Stats{Open: 1, Accepted: 20, Refused: 3, AcceptErrors: 2}}
		b, err := instance.StatsJSON(snap, rows, probe, clients, conns)
		if err != nil {
			t.Fatal(err)
		}
		outs = append(outs, jsonOutput{"stats --json (" + kind + ")", "stats", b})
	}
	return outs
}

// statsFlowsOutputs are stats --flows --json snapshots from a flow table
// filled by hop's own tests' kinds of flow: L4S (scored), Classic ECN,
// Not-ECT with drops, a changed one, with a share's clients.
func statsFlowsOutputs(t *testing.T) []jsonOutput {
	at := time.Unix(1_800_000_000, 0)
	changed := at.Add(time.Second)
	table := hop.FlowTable{Dir: "up", Taken: at, Capacity: hop.FlowTableSize, Active: 4, Evicted: 1,
		QProt: hop.QProtThresholds{LatencyMs: 1, ScoreMs: 4}}
	table.Other.Drops = map[string]uint64{"limit": 1}
	table.RTT = &rtt.Stats{Packets: 10, Samples: 5, Dropped: 1}
	l4s := hop.Flow{Proto: "udp", Src: "10.254.1.10:5000", Dst: "10.0.0.1:443", First: at, Last: at, Queue: "L", RateBps: 1000,
		Share: 0.1, SojournP50Ms: 0.2, SojournP99Ms: 1, Class: hop.ClassL4S, Codepoint: "ECT(1)", Verdict: "well-behaved",
		QProt: &hop.FlowQProt{ThresholdMs: 4, RecentL: 10},
		RTT: &hop.FlowRTT{Method: "tcp-timestamps", Status: "measured", ClientHalf: rtt.Figures{N: 2, P50Ms: 1, P99Ms: 2, MaxMs: 2},
			ServerHalf: rtt.Figures{N: 3, P50Ms: 20, P99Ms: 21, MaxMs: 21}, Sum: rtt.Figures{N: 2, P50Ms: 21, P99Ms: 23, MaxMs: 23}}}
	l4s.Marks = 3
	classic := l4s
	classic.Class, classic.Codepoint, classic.QProt, classic.Verdict = hop.ClassNotECT, "Not-ECT", nil, "10% of the link, 1 dropped"
	classic.Drops = map[string]uint64{"classic": 1}
	moved := l4s
	moved.Class, moved.ChangedTo, moved.ChangedAt = hop.ClassChanged, "Not-ECT", &changed
	table.Flows = []hop.Flow{l4s, classic, moved}
	clients := []lan.Client{{Lease: lan.Lease{MAC: "02:00:00:00:00:01", Addr: netip.MustParseAddr("10.254.1.10"), Hostname: "phone"}}}
	snap := &hop.Snapshot{Name: "pi2hop", Running: true}
	snap.Up.Taken = at
	b, err := instance.FlowsJSON(snap, instance.FlowsViews([2]hop.FlowTable{table, {Dir: "down", Taken: at, Capacity: hop.FlowTableSize}}, clients))
	if err != nil {
		t.Fatal(err)
	}
	return []jsonOutput{{"stats --flows --json", "stats.flows", b}}
}

// replayOutputs are replay's lines (pkt, pi, summary) of a CSV trace
// through each queue kind, and of a capture.
func replayOutputs(t *testing.T) []jsonOutput {
	dir := t.TempDir()
	var csv strings.Builder
	csv.WriteString("time_ns,bytes,ecn,flow\n")
	for i := range 200 { // 20 Mbit/s of all codepoints into 10 Mbit/s
		fmt.Fprintf(&csv, "%d,1500,%d,%d\n", i*600_000, i%4, i%3)
	}
	trace := filepath.Join(dir, "in.csv")
	if err := os.WriteFile(trace, []byte(csv.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	capture := filepath.Join(dir, "in.pcapng")
	var outs []jsonOutput
	for _, kind := range aqm.Kinds {
		args := []string{"replay", "--trace", trace, "--rate", "10mbit", "--aqm", kind, "--limit", "100"}
		if kind == aqm.KindDualPI2 {
			args = append(args, "--capture", capture)
		}
		out, err := runCLI(t, "", args...)
		if err != nil {
			t.Fatalf("replay --aqm %s: %v", kind, err)
		}
		outs = append(outs, replayLines(t, "replay --aqm "+kind, out)...)
	}
	// A profile's settings: its name, jitter and bursts in the config.
	out, err := runCLI(t, "", "replay", "--trace", trace, "--profile", "wifi")
	if err != nil {
		t.Fatal(err)
	}
	outs = append(outs, replayLines(t, "replay --profile wifi", out)...)
	out, err = runCLI(t, "", "replay", "--pcap", capture, "--rate", "10mbit")
	if err != nil {
		t.Fatal(err)
	}
	return append(outs, replayLines(t, "replay --pcap", out)...)
}

// replayLines splits replay's output into its lines, each documented by
// the object of its type.
func replayLines(t *testing.T, what, out string) []jsonOutput {
	var outs []jsonOutput
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(nil, 1<<20)
	seen := map[string]bool{}
	for sc.Scan() {
		var l struct{ Type string }
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("%s: %q: %v", what, sc.Text(), err)
		}
		if seen[l.Type] && l.Type != "pkt" {
			continue
		}
		seen[l.Type] = true
		outs = append(outs, jsonOutput{what + " (" + l.Type + " line)", "replay." + l.Type, append([]byte(nil), sc.Bytes()...)})
	}
	return outs
}

// analyzeOutputs is analyze --json of a hop's capture.
func analyzeOutputs(t *testing.T) []jsonOutput {
	capture := filepath.Join(t.TempDir(), "hop.pcapng")
	writeHopCapture(t, capture)
	out, err := runCLI(t, "", "analyze", "--json", capture)
	if err != nil {
		t.Fatal(err)
	}
	// A bleached flow, for the fields of a named path fault.
	faulty := filepath.Join(t.TempDir(), "bleached.pcapng")
	c, err := pcap.NewCapture(faulty, pcap.Options{})
	if err != nil {
		t.Fatal(err)
	}
	taps := c.AddTaps("up")
	pkt := ipv4Packet(aqm.ECT1, 1)
	c.OfferWait(taps.In, 1_700_000_000e9, pkt, len(pkt), nil)
	pkt = pcaptest.SetECN(pkt, aqm.NotECT)
	c.OfferWait(taps.Out, 1_700_000_000e9+1e6, pkt, len(pkt), nil)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	bleached, err := runCLI(t, "", "analyze", "--json", faulty)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(bleached, `"kind": "bleach"`) {
		t.Fatalf("analyze of a bleached flow names no bleach:\n%s", bleached)
	}
	// A TCP exchange both ways, for the fields of a flow's round trips.
	timed := filepath.Join(t.TempDir(), "rtt.pcapng")
	if c, err = pcap.NewCapture(timed, pcap.Options{}); err != nil {
		t.Fatal(err)
	}
	up, down := c.AddTaps("up"), c.AddTaps("down")
	seg := pcaptest.Packet{Src: pcaptest.Cli4, Dst: pcaptest.Srv4, Proto: 6, SPort: 5000, DPort: 80, Flags: 0x10, Payload: 100, TS: true, TSval: 10, TSecr: 1}
	ack := pcaptest.Packet{Src: pcaptest.Srv4, Dst: pcaptest.Cli4, Proto: 6, SPort: 80, DPort: 5000, Flags: 0x10, Ack: 100, TS: true, TSval: 20, TSecr: 10}
	next := seg
	next.Seq, next.TSval, next.TSecr = 100, 11, 20
	for i, p := range []struct {
		taps pcap.Taps
		pkt  pcaptest.Packet
	}{{up, seg}, {down, ack}, {up, next}} {
		b, at := p.pkt.Build(), 1_700_000_000e9+int64(i)*5e6
		c.OfferWait(p.taps.In, at, b, len(b), nil)
		c.OfferWait(p.taps.Out, at+1e6, b, len(b), nil)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	rtts, err := runCLI(t, "", "analyze", "--json", timed)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(rtts, `"method": "tcp-timestamps"`) {
		t.Fatalf("analyze of a timed TCP flow lists no round trips:\n%s", rtts)
	}
	return []jsonOutput{{"analyze --json", "analyze", []byte(out)}, {"analyze --json, a bleached flow", "analyze", []byte(bleached)},
		{"analyze --json, round trips", "analyze", []byte(rtts)}}
}

// flowOutputs are flow --json's lines: an interval with every field set,
// and each kind of flow's summary, as the reporter writes them.
func flowOutputs(t *testing.T) []jsonOutput {
	var b strings.Builder
	r := flow.NewReporter(&b, true, "cli")
	r.Interval(flow.Interval{Flow: "video-recv", Label: "cli", T: 1, Dur: 1, SentBps: 1, GoodputBps: 1, PacingBps: 1, TargetBps: 1,
		Packets: 1, RTTSamples: 1, RTTMeanMs: 1, RTTP50Ms: 1, RTTP99Ms: 1, RTTMaxMs: 1, SRTTMs: 1, CEFrac: 0.5, LossFrac: 0.5,
		WindowPkts: 1, Alpha: 0.5, ECN: "ECT(1)", ErrorL4S: true, FPS: 1, Frames: 1, Keyframes: 1, Late: 1, Undecodable: 1,
		Stalls: 1, StallMs: 1, FrameDelayP50: 1, FrameDelayP99: 1, PLIs: 1})
	rtt := []time.Duration{time.Millisecond, 2 * time.Millisecond}
	snd := flow.SenderSummary{ECN: "ECT(1)", Duration: time.Second, PacketsSent: 10, GoodputBps: 1e6, RTT: rtt}
	r.SenderSummary("prague-send", snd)
	snd.Validation = flow.ECNValidation{State: "failed", Failed: "bleached", At: time.Second, RTTRiseNoCE: 20 * time.Millisecond}
	r.SenderSummary("prague-send", snd) // the optional fields of a failed validation
	r.VideoSenderSummary(flow.VideoSenderSummary{SenderSummary: snd, Frames: 30, Keyframes: 1})
	r.ReceiverSummary(flow.ReceiverSummary{Duration: time.Second, Packets: 10})
	r.VideoSummary(flow.VideoReceiverSummary{Duration: time.Second, FPS: []int{30}, FrameDelay: rtt})
	r.BulkSummary(flow.BulkSummary{Bytes: 1000, Duration: time.Second})
	r.ProbeSummary(flow.ProbeSummary{ECN: "ECT(1)", Sent: 10, Received: 10, RTT: rtt})
	var outs []jsonOutput
	for _, l := range strings.Split(strings.TrimSpace(b.String()), "\n") {
		var h struct {
			Flow    string
			Summary bool
		}
		if err := json.Unmarshal([]byte(l), &h); err != nil {
			t.Fatalf("flow line %q: %v", l, err)
		}
		root := "flow.interval"
		if h.Summary {
			root = "flow." + h.Flow
		}
		outs = append(outs, jsonOutput{"flow --json (" + root + ")", root, []byte(l)})
	}
	return outs
}

// profilesOutput is profiles --json.
func profilesOutput(t *testing.T) jsonOutput {
	out, err := runCLI(t, "", "profiles", "--json")
	if err != nil {
		t.Fatal(err)
	}
	return jsonOutput{"profiles --json", "profiles", []byte(out)}
}
