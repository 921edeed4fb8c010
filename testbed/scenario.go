package testbed

import (
	"fmt"
	"sort"
	"time"

	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/flow"
	"github.com/pi2hop/pi2hop/shaper"
)

// DefaultScenario is what `pi2hop lab` runs without a name: Apple's WWDC23
// demonstration.
const DefaultScenario = "l4s-demo"

// FlowKind is the kind of traffic a flow carries.
type FlowKind string

const (
	// KindVideo is the video call (flow.VideoSend on the server,
	// flow.VideoRecv on the client): 30 fps over Prague congestion control.
	KindVideo FlowKind = "video"
	// KindPrague is a bulk UDP Prague flow, server to client.
	KindPrague FlowKind = "prague"
	// KindCubic is a kernel TCP download with cubic, ECN off (Not-ECT, so
	// Classic queue): flow.BulkServe on the server, flow.BulkFetch on the client.
	KindCubic FlowKind = "tcp-cubic"
)

// FlowSpec is one flow of a run. Data always goes server → client, the
// direction Apple's demo loads (downloads beside a call).
type FlowSpec struct {
	Label string   `json:"label"`
	Kind  FlowKind `json:"kind"`
	ECN   string   `json:"ecn"` // flow.ECNL4S or flow.ECNClassic
	// Window (KindCubic) pins the receiver's TCP window in bytes with
	// TCP_WINDOW_CLAMP and SO_RCVBUF; 0 leaves the kernel's autotuning.
	Window uint64 `json:"window,omitempty"`
	// NoECNValidation (KindVideo, KindPrague) turns the sender's ECN
	// validation off: the naive app that keeps sending ECT(1) whatever
	// the path does to it.
	NoECNValidation bool `json:"no_ecn_validation,omitempty"`
}

// RunSpec is one run: a fresh topology, one bottleneck configuration and
// its flows, all started together.
type RunSpec struct {
	Name    string        `json:"name"` // file-name safe
	Title   string        `json:"title"`
	Queue   aqm.Spec      `json:"queue"` // both directions; every knob (times in ns)
	Buffer  string        `json:"buffer"`
	RateBps uint64        `json:"rate_bps"`
	RTT     time.Duration `json:"rtt_ns"`
	// Duration of the traffic, Warmup of it left out of the figures.
	Duration time.Duration `json:"duration_ns"`
	Warmup   time.Duration `json:"warmup_ns"`
	Flows    []FlowSpec    `json:"flows"`
	Seed     uint64        `json:"seed"`
	// TCPECN lets the kernel TCP flows negotiate classic ECN (RFC 3168,
	// ECT(0)): classic-ecn. Otherwise they are Not-ECT.
	TCPECN bool `json:"tcp_ecn,omitempty"`
	// Aggregate makes the link send in Wi-Fi-like bursts (wifi).
	Aggregate shaper.Aggregate `json:"aggregate,omitempty"`
	// ECNFault is the path fault on both directions (shaper.ParseFault's
	// spec); "" = none.
	ECNFault string `json:"ecn_fault,omitempty"`

	DistanceKm int `json:"distance_km,omitempty"` // bdp: the seed-001 distance of this RTT
}

// scenario is a lab definition: its defaults, its runs and what it checks.
type scenario struct {
	name, title string
	doc         string // shown by `pi2hop lab --list` and in report.md
	defaults    Config
	quick       Config // --quick: the durations CI can afford
	runs        func(c Config) []RunSpec
}

var scenarios = map[string]*scenario{}

func define(s *scenario) { scenarios[s.name] = s }

// ScenarioNames lists the scenarios, default first.
func ScenarioNames() []string {
	names := make([]string, 0, len(scenarios))
	for n := range scenarios {
		if n != DefaultScenario {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return append([]string{DefaultScenario}, names...)
}

// Describe returns a scenario's title and documentation.
func Describe(name string) (title, doc string, ok bool) {
	s, ok := scenarios[name]
	if !ok {
		return "", "", false
	}
	return s.title, s.doc, true
}

// Runs returns the runs a resolved Config makes.
func (c Config) Runs() []RunSpec {
	runs := scenarios[c.Scenario].runs(c)
	if c.ECNFault != "" {
		// --ecn-fault puts one fault on every run, over a scenario's own.
		for i := range runs {
			runs[i].ECNFault = c.ECNFault
		}
	}
	return runs
}

// DefaultMinQlenStep is the lab's min_qlen_step: the kernel's defaults
// otherwise (15 ms target, 1 ms step). With the kernel's 0, a packet that
// finds the L queue empty can still be step-marked, and at 10 Mbit/s it
// is whenever it waits behind a packet on the wire: a 1428-byte Prague
// packet takes 1.14 ms to serialise, more than the 1 ms threshold. 1
// exempts it, like the Th_len of RFC 9332 Appendix A.1 (no L4S marking
// while the L queue holds a single packet); without it Prague falls far
// below cubic's rate in coexist (docs/performance.md).
const DefaultMinQlenStep = 1

// kernelMinQlenStep is the kernel's min_qlen_step, which the prague
// scenario keeps: its bounds are udp_prague's at kernel defaults,
// and with 1 the first packet queued behind one on the wire goes unmarked,
// which at 10 Mbit/s lets the L queue run one packet longer (the
// virtual-time model, flow/prague TestAloneThroughDualPI2: p99
// 2.54 ms with 0, 2.83 ms with 1; utilisation 97.7 % either way).
var kernelMinQlenStep uint32 = 0

// dualPI2 is the bottleneck's DualPI2: kernel defaults but min_qlen_step.
func dualPI2(minQlenStep uint32) aqm.Spec {
	cfg := aqm.DefaultConfig()
	cfg.MinQlenStep = minQlenStep
	return aqm.Spec{Kind: aqm.KindDualPI2, DualPI2: cfg}
}

func dualPI2Buffer(minQlenStep uint32) string {
	d := aqm.DefaultConfig()
	return fmt.Sprintf("DualPI2, kernel defaults but min_qlen_step %d (limit %d packets, step %v)",
		minQlenStep, d.Limit, time.Duration(d.StepThresh))
}

func init() {
	define(&scenario{
		name:  "l4s-demo",
		title: "A video call beside four downloads, with and without L4S (WWDC23)",
		doc: `Apple's WWDC23 demonstration (session 10004): a 10 Mbit/s bottleneck with a
20 ms minimum RTT (10 ms each way), four classic bulk downloads (kernel TCP
cubic, Not-ECT) competing with a video call, all server to client. Three runs
with the same load: DualPI2 (kernel defaults but min_qlen_step 1, see
--min-qlen-step) with the call on L4S (ECT(1), Prague response);
DualPI2 with the same call classic (Not-ECT, loss-only response); and a
tail-drop FIFO of --fifo-limit packets (default 100 packets ≈ 150 KB of
1500-byte packets, 120 ms at 10 Mbit/s: a deep home-router buffer) with the
call classic. Per run: the call's RTT p50/p95/p99/max, loss, stall rate,
seconds at ≥ 25 fps and at 0 fps, queue delay per queue, bulk goodput.`,
		defaults: Config{RateBps: 10_000_000, RTT: 20 * time.Millisecond, Duration: 45 * time.Second,
			Warmup: 5 * time.Second, Seed: 1, Bulk: 4, FIFOLimit: 100},
		// 20 s measured per run: a 100 ms scheduling stall of the machine
		// then moves the call's RTT p99 less than a 10 s run's.
		quick: Config{RateBps: 10_000_000, RTT: 20 * time.Millisecond, Duration: 20 * time.Second,
			Warmup: 5 * time.Second, Seed: 1, Bulk: 4, FIFOLimit: 100},
		runs: l4sDemoRuns,
	})
	define(&scenario{
		name:  "coexist",
		title: "One Prague flow and one cubic flow sharing a DualPI2 bottleneck",
		doc: `Apple's recommended check that a bottleneck really is L4S: one UDP Prague flow
(ECT(1), L queue) and one kernel TCP cubic flow (Not-ECT, C queue) share a
10 Mbit/s, 20 ms DualPI2 bottleneck (kernel defaults but min_qlen_step 1: with
0, at this rate Prague gets about a quarter of cubic's rate, see
--min-qlen-step). Reports the rate ratio L4S/classic
(coupling k = 2 aims at about 1), Jain's index and the queue delay per queue.`,
		defaults: Config{RateBps: 10_000_000, RTT: 20 * time.Millisecond, Duration: 45 * time.Second,
			Warmup: 5 * time.Second, Seed: 1},
		quick: Config{RateBps: 10_000_000, RTT: 20 * time.Millisecond, Duration: 15 * time.Second,
			Warmup: 5 * time.Second, Seed: 1},
		runs: coexistRuns,
	})
	define(&scenario{
		name:  "bdp",
		title: "Window-limited TCP: throughput ≤ window / RTT (Cisco's BDP note)",
		doc: `The table of Cisco's technical note "Why Your Application only
Uses 10Mbps Even the Link is 1Gbps?": a 1 Gbit/s path at 1000, 4000 and
8000 km (RTT 15, 50 and 120 ms), one kernel TCP cubic download with a
17 520-byte receive window
(Windows 2003's default) and one with 6 553 500 bytes. The window is pinned
on the receiver with TCP_WINDOW_CLAMP and SO_RCVBUF. Predicted throughput is
min(window/RTT, link). The hop forwards in user space, so 1 Gbit/s is more
than a small machine forwards: --quick uses 100 Mbit/s and the 17 520-byte
window alone (its rows, ≤ 9.3 Mbit/s, are unaffected; the large window is
limited by a 100 Mbit/s link, not by itself, so it would show nothing).`,
		defaults: Config{RateBps: 1_000_000_000, Duration: 10 * time.Second, Warmup: 2 * time.Second, Seed: 1,
			RTTs:    []time.Duration{15 * time.Millisecond, 50 * time.Millisecond, 120 * time.Millisecond},
			Windows: []uint64{17_520, 6_553_500}},
		quick: Config{RateBps: 100_000_000, Duration: 5 * time.Second, Warmup: time.Second, Seed: 1,
			RTTs:    []time.Duration{15 * time.Millisecond, 50 * time.Millisecond, 120 * time.Millisecond},
			Windows: []uint64{17_520}},
		runs: bdpRuns,
	})
	define(&scenario{
		name:  "prague",
		title: "One Prague flow alone on a DualPI2 bottleneck",
		doc: `A single UDP Prague flow (ECT(1)) through a 20 ms DualPI2 bottleneck at the
kernel's defaults (min_qlen_step 0, as udp_prague meets the kernel's
qdisc), one run at 10 Mbit/s and one at 50 Mbit/s (--quick: 10 Mbit/s only; --rate R: R
only): the scalable sender should keep the link busy while the L queue stays
short, as udp_prague does — utilisation ≥ 97 % with L sojourn p99 ≤ 2.6 ms at
10 Mbit/s, ≥ 98.5 % with p99 ≤ 1.8 ms at 50 Mbit/s.`,
		defaults: Config{RateBps: 10_000_000, RTT: 20 * time.Millisecond, Duration: 30 * time.Second,
			Warmup: 5 * time.Second, Seed: 1, MinQlenStep: &kernelMinQlenStep, Rates: []uint64{10_000_000, 50_000_000}},
		quick: Config{RateBps: 10_000_000, RTT: 20 * time.Millisecond, Duration: 12 * time.Second,
			Warmup: 4 * time.Second, Seed: 1, MinQlenStep: &kernelMinQlenStep, Rates: []uint64{10_000_000}},
		runs: pragueRuns,
	})
}

func init() {
	define(&scenario{
		name:  "aqm-zoo",
		title: "The WWDC23 call beside four downloads through the bottlenecks an app meets",
		doc: `The l4s-demo load (a 30 fps video call beside four classic cubic downloads,
10 Mbit/s, 20 ms) through each queue an L4S app meets in the wild, every one
with Linux's defaults: a tail-drop FIFO, fq_codel (a home router's default),
single-queue CoDel and PIE with classic ECN marking (RFC 3168 marks, which an
L4S sender takes for its own: the case RFC 9330 warns about), DualPI2 (RFC
9332) and DOCSIS 3.1 low latency (DualQ with queue protection, RFC 9957);
the call on L4S (ECT(1), Prague) and classic (Not-ECT). One table and one
RTT CDF across them.`,
		defaults: Config{RateBps: 10_000_000, RTT: 20 * time.Millisecond, Duration: 45 * time.Second,
			Warmup: 5 * time.Second, Seed: 1, Bulk: 4, FIFOLimit: 100},
		// 12 runs, so 10 s each (the first 2 s left out) keeps CI's lab
		// time near two minutes: four cubic flows fill the 100-packet FIFO
		// within 0.2 s of their start (slow start doubles per 20 ms RTT
		// from 10 packets to the 25 KB path plus 150 KB buffer), and 8 s
		// of a 30 fps call are some 1100 RTT samples, 240 frames.
		quick: Config{RateBps: 10_000_000, RTT: 20 * time.Millisecond, Duration: 10 * time.Second,
			Warmup: 2 * time.Second, Seed: 1, Bulk: 4, FIFOLimit: 100},
		runs: aqmZooRuns,
	})
	define(&scenario{
		name:  "classic-ecn",
		title: "Prague and ECN cubic through a single-queue Classic-ECN AQM",
		doc: `What the L4S operational guidance warns about: one UDP Prague flow (ECT(1)) and
one kernel TCP cubic flow negotiating classic ECN (ECT(0)) share a 10 Mbit/s,
20 ms bottleneck whose only queue marks with Classic-ECN semantics, CoDel
(ecn) and PIE (ecn), Linux's defaults otherwise. Prague takes each CE mark as
a fine-grained L4S signal while cubic halves on one: the report gives the
rate ratio Prague/cubic and both flows' queue delay (one queue, so one delay).`,
		defaults: Config{RateBps: 10_000_000, RTT: 20 * time.Millisecond, Duration: 45 * time.Second,
			Warmup: 5 * time.Second, Seed: 1},
		quick: Config{RateBps: 10_000_000, RTT: 20 * time.Millisecond, Duration: 15 * time.Second,
			Warmup: 5 * time.Second, Seed: 1},
		runs: classicECNRuns,
	})
	define(&scenario{
		name:  "wifi",
		title: "The l4s-demo call through a Wi-Fi-like aggregating link, DualPI2 vs FIFO",
		doc: `The l4s-demo load through a link that sends in bursts, as a Wi-Fi station with
frame aggregation does: 40 Mbit/s on the air, a burst every 4 ms that ends
with the packet crossing 5000 bytes, as netem's slot (four 1500-byte
packets: at most 12 Mbit/s on average), 20 ms base RTT. Between bursts packets wait
in the queue, so the L queue's sojourn jumps by up to a burst interval: the
main source of L4S marking in the field (heistp/l4s-tests). Runs: DualPI2 with
the call on L4S, DualPI2 with it classic, a FIFO with it classic.`,
		defaults: Config{RateBps: 40_000_000, RTT: 20 * time.Millisecond, Duration: 45 * time.Second,
			Warmup: 5 * time.Second, Seed: 1, Bulk: 4, FIFOLimit: 100},
		quick: Config{RateBps: 40_000_000, RTT: 20 * time.Millisecond, Duration: 20 * time.Second,
			Warmup: 5 * time.Second, Seed: 1, Bulk: 4, FIFOLimit: 100},
		runs: wifiRuns,
	})
}

// zooQueue is one bottleneck of aqm-zoo and classic-ecn: a kind with
// Linux's defaults, ECN on for the single-queue AQMs.
type zooQueue struct {
	name, title, buffer string
	spec                aqm.Spec
}

func zooQueues(c Config) []zooQueue {
	spec := func(kind string, mod func(*aqm.Spec)) aqm.Spec {
		s, _ := aqm.DefaultSpec(kind)
		if mod != nil {
			mod(&s)
		}
		return s
	}
	return []zooQueue{
		{"fifo", "FIFO", fmt.Sprintf("FIFO tail drop, %d packets", c.FIFOLimit),
			aqm.Spec{Kind: aqm.KindFIFO, FIFO: aqm.FIFOConfig{Limit: c.FIFOLimit}}},
		{"fq_codel", "fq_codel", "fq_codel, Linux defaults (ecn)", spec(aqm.KindFQCodel, nil)},
		{"codel-ecn", "CoDel-ECN", "CoDel, Linux defaults but ecn", spec(aqm.KindCoDel, func(s *aqm.Spec) { s.CoDel.ECN = true })},
		{"pie-ecn", "PIE-ECN", "PIE, Linux defaults but ecn", spec(aqm.KindPIE, func(s *aqm.Spec) { s.PIE.ECN = true })},
		{"dualpi2", "DualPI2", dualPI2Buffer(*c.MinQlenStep), dualPI2(*c.MinQlenStep)},
		{"docsis", "DOCSIS LL", "DOCSIS 3.1 low latency, queue protection on",
			spec(aqm.KindDOCSIS, func(s *aqm.Spec) { s.DOCSIS.Rate = c.RateBps })},
	}
}

func aqmZooRuns(c Config) []RunSpec {
	withCall := func(ecn string) []FlowSpec {
		fs := []FlowSpec{{Label: "call", Kind: KindVideo, ECN: ecn}}
		for i := 1; i <= c.Bulk; i++ {
			fs = append(fs, FlowSpec{Label: fmt.Sprintf("bulk-%d", i), Kind: KindCubic, ECN: flow.ECNClassic})
		}
		return fs
	}
	var runs []RunSpec
	for _, q := range zooQueues(c) {
		for _, call := range []struct{ name, ecn string }{{"l4s", flow.ECNL4S}, {"classic", flow.ECNClassic}} {
			r := baseRun(c)
			r.Name, r.Title = q.name+"-"+call.name, q.title+", call "+map[string]string{"l4s": "on L4S", "classic": "classic"}[call.name]
			r.Queue, r.Buffer, r.Flows = q.spec, q.buffer, withCall(call.ecn)
			runs = append(runs, r)
		}
	}
	return runs
}

func classicECNRuns(c Config) []RunSpec {
	var runs []RunSpec
	for _, q := range zooQueues(c) {
		if q.name != "codel-ecn" && q.name != "pie-ecn" {
			continue
		}
		r := baseRun(c)
		r.Name, r.Title = q.name, q.title+", Prague + ECN cubic"
		r.Queue, r.Buffer, r.TCPECN = q.spec, q.buffer, true
		r.Flows = []FlowSpec{
			{Label: "prague", Kind: KindPrague, ECN: flow.ECNL4S},
			{Label: "cubic-ecn", Kind: KindCubic, ECN: flow.ECNClassic},
		}
		runs = append(runs, r)
	}
	return runs
}

// wifiAggregate: a burst every 4 ms, ending with the packet that crosses
// 5000 bytes (shaper.Aggregate).
var wifiAggregate = shaper.Aggregate{Interval: 4_000_000, Bytes: 5000}

func wifiRuns(c Config) []RunSpec {
	runs := l4sDemoRuns(c)
	for i := range runs {
		runs[i].Aggregate = wifiAggregate
		runs[i].Buffer += fmt.Sprintf("; link bursts every %v, each ending with the packet that crosses %d B", time.Duration(wifiAggregate.Interval), wifiAggregate.Bytes)
	}
	return runs
}

func baseRun(c Config) RunSpec {
	return RunSpec{Queue: dualPI2(*c.MinQlenStep), Buffer: dualPI2Buffer(*c.MinQlenStep), RateBps: c.RateBps, RTT: c.RTT,
		Duration: c.Duration, Warmup: c.Warmup, Seed: c.Seed}
}

func l4sDemoRuns(c Config) []RunSpec {
	withCall := func(ecn string) []FlowSpec {
		fs := []FlowSpec{{Label: "call", Kind: KindVideo, ECN: ecn}}
		for i := 1; i <= c.Bulk; i++ {
			fs = append(fs, FlowSpec{Label: fmt.Sprintf("bulk-%d", i), Kind: KindCubic, ECN: flow.ECNClassic})
		}
		return fs
	}
	l4s := baseRun(c)
	l4s.Name, l4s.Title, l4s.Flows = "dualpi2-l4s", "DualPI2, call on L4S", withCall(flow.ECNL4S)
	classic := baseRun(c)
	classic.Name, classic.Title, classic.Flows = "dualpi2-classic", "DualPI2, call classic", withCall(flow.ECNClassic)
	fifo := baseRun(c)
	fifo.Name, fifo.Title, fifo.Flows = "fifo-classic", "FIFO, call classic", withCall(flow.ECNClassic)
	fifo.Queue = aqm.Spec{Kind: aqm.KindFIFO, FIFO: aqm.FIFOConfig{Limit: c.FIFOLimit}}
	fifo.Buffer = fmt.Sprintf("FIFO tail drop, %d packets (%d KB of 1500-byte packets)", c.FIFOLimit, c.FIFOLimit*1500/1000)
	return []RunSpec{l4s, classic, fifo}
}

func coexistRuns(c Config) []RunSpec {
	r := baseRun(c)
	r.Name, r.Title = "coexist", "DualPI2, Prague + cubic"
	r.Flows = []FlowSpec{
		{Label: "prague", Kind: KindPrague, ECN: flow.ECNL4S},
		{Label: "cubic", Kind: KindCubic, ECN: flow.ECNClassic},
	}
	return []RunSpec{r}
}

// pragueRuns is one run per rate; the first is named "prague", the
// others by their rate.
func pragueRuns(c Config) []RunSpec {
	var runs []RunSpec
	for i, rate := range c.Rates {
		r := baseRun(c)
		r.RateBps = rate
		r.Name, r.Title = "prague", "DualPI2, Prague alone, "+fmtRate(float64(rate))
		if i > 0 {
			r.Name = fmt.Sprintf("prague-%dkbit", rate/1000)
			if rate%1_000_000 == 0 {
				r.Name = fmt.Sprintf("prague-%dmbit", rate/1_000_000)
			}
		}
		r.Flows = []FlowSpec{{Label: "prague", Kind: KindPrague, ECN: flow.ECNL4S}}
		runs = append(runs, r)
	}
	return runs
}

// distanceOf gives seed 001's distance for its RTTs (15, 50, 120 ms), 0
// for others.
func distanceOf(rtt time.Duration) int {
	switch rtt {
	case 15 * time.Millisecond:
		return 1000
	case 50 * time.Millisecond:
		return 4000
	case 120 * time.Millisecond:
		return 8000
	}
	return 0
}

func bdpRuns(c Config) []RunSpec {
	var runs []RunSpec
	for _, rtt := range c.RTTs {
		for _, w := range c.Windows {
			r := baseRun(c)
			r.RTT, r.DistanceKm = rtt, distanceOf(rtt)
			r.Name = fmt.Sprintf("rtt%dms-win%d", rtt.Milliseconds(), w)
			r.Title = fmt.Sprintf("RTT %v, window %d B", rtt, w)
			r.Flows = []FlowSpec{{Label: "tcp", Kind: KindCubic, ECN: flow.ECNClassic, Window: w}}
			runs = append(runs, r)
		}
	}
	return runs
}
