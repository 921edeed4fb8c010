package testbed

import (
	"fmt"
	"time"

	"github.com/pi2hop/pi2hop/flow"
)

func init() {
	define(&scenario{
		name:  "ecn-faults",
		title: "The WWDC23 call beside four downloads through each ECN path fault, with and without validation",
		doc: `What each ECN fault on the path does to an L4S call: the l4s-demo load (a 30 fps
video call on L4S, ECT(1) with Prague's response, beside four classic cubic
downloads; 10 Mbit/s, 20 ms, DualPI2) with one --ecn-fault on both directions
per run: none, bleach, tos-zero, ect1-to-ect0 and ce-bleach before the queue
and after it, ect0-to-ect1, mangle and drop-ect before it. Each run twice:
the call validating ECN (RFC 9000 §13.4.2: it falls back to Not-ECT with a
loss-only response when the feedback shows the fault) and a naive call that
keeps ECT(1) whatever happens. Per run: whether and when validation detected
the fault, what the call sent at the end, its RTT p50/p99, loss, stalls and
fps, the L and C queues. A fault before the queue decides the call's queue
(bleached or re-marked ECT(0) packets wait in the Classic queue); CE bleached
after it hides every mark from the call, which validation cannot see. Checks:
validation detects bleach, tos-zero, ect1-to-ect0, mangle and drop-ect, and
never falls back without a fault. --quick runs three short ones: bleach
before and ect1-to-ect0 before with validation, ce-bleach after without
(l4s-demo's L4S call is the clean path's, and its checks say it never falls
back).`,
		defaults: Config{RateBps: 10_000_000, RTT: 20 * time.Millisecond, Duration: 30 * time.Second,
			Warmup: 5 * time.Second, Seed: 1, Bulk: 4},
		// Three runs of 8 s (2 s left out) keep CI's share near half a
		// minute: validation decides within its test period at the start
		// (a few RTTs), and 6 s of a 30 fps call are some 800 RTT samples.
		quick: Config{RateBps: 10_000_000, RTT: 20 * time.Millisecond, Duration: 8 * time.Second,
			Warmup: 2 * time.Second, Seed: 1, Bulk: 4},
		runs: ecnFaultRuns,
	})
}

// ecnFault is one fault setting of the ecn-faults scenario.
type ecnFault struct {
	kind  string
	after bool // after the queue (downstream); otherwise before it
}

func (f ecnFault) spec() string {
	if f.after {
		return f.kind + ",after"
	}
	return f.kind
}

// ecnFaultSet: every kind before the queue, and after it where that
// differs for a call sending ECT(1): ect0-to-ect1 leaves it alone either
// way, mangle turns every packet CE either way (the L queue sees ECT(1) or
// CE: both L), drop-ect loses it either way.
var ecnFaultSet = []ecnFault{
	{"none", false},
	{"bleach", false}, {"bleach", true},
	{"tos-zero", false}, {"tos-zero", true},
	{"ect1-to-ect0", false}, {"ect1-to-ect0", true},
	{"ect0-to-ect1", false},
	{"ce-bleach", false}, {"ce-bleach", true},
	{"mangle", false},
	{"drop-ect", false},
}

// ecnFaultQuick are --quick's runs: a fault that moves the call to the
// Classic queue and one that re-marks it (both detected), and the one
// validation cannot see, on the naive call. The clean path's baseline is
// l4s-demo's.
var ecnFaultQuick = []struct {
	f          ecnFault
	validation bool
}{
	{ecnFault{"bleach", false}, true},
	{ecnFault{"ce-bleach", true}, false},
	{ecnFault{"ect1-to-ect0", false}, true},
}

func ecnFaultRuns(c Config) []RunSpec {
	type one struct {
		f          ecnFault
		validation bool
	}
	var set []one
	if c.Quick {
		for _, q := range ecnFaultQuick {
			set = append(set, one(q))
		}
	} else {
		for _, f := range ecnFaultSet {
			set = append(set, one{f, true}, one{f, false})
		}
	}
	var runs []RunSpec
	for _, o := range set {
		r := baseRun(c)
		r.ECNFault = o.f.spec()
		where, val := " before the queue", "validation on"
		if o.f.after {
			where = " after the queue"
		}
		if o.f.kind == "none" {
			where = ""
		}
		name := o.f.kind
		if o.f.after {
			name += "-after"
		}
		if o.validation {
			name += "-val"
		} else {
			name += "-noval"
			val = "validation off"
		}
		r.Name, r.Title = name, fmt.Sprintf("%s%s, %s", o.f.kind, where, val)
		r.Flows = []FlowSpec{{Label: "call", Kind: KindVideo, ECN: flow.ECNL4S, NoECNValidation: !o.validation}}
		for i := 1; i <= c.Bulk; i++ {
			r.Flows = append(r.Flows, FlowSpec{Label: fmt.Sprintf("bulk-%d", i), Kind: KindCubic, ECN: flow.ECNClassic})
		}
		runs = append(runs, r)
	}
	return runs
}
