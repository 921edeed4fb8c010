package check

import (
	"fmt"
	"strings"
	"time"

	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/figure"
)

// The bottleneck verdicts of the load test. Only DualQueue makes a path
// L4S-ready: the others say why not.
const (
	DualQueue    = "L4S dual-queue AQM"
	SingleQueue  = "single-queue Classic-ECN AQM"
	TailDrop     = "no AQM: tail drop"
	NotSaturated = "not saturated"
	NotMeasured  = "not measured"
	// ChangedUnderLoad withholds the verdict: the L4S flow (or its RTT
	// probe) did not reach the bottleneck as ECT(1), so the bottleneck
	// could not treat it as L4S, whatever it is.
	ChangedUnderLoad = "ECN changed during the load"
	singleDetail     = "L4S traffic gets classic treatment"
	notSatDetail     = "the bottleneck is beyond --max-rate or elsewhere"
	notMeasDetail    = "no probe came back during the load"
)

// The thresholds the classification reads the figures with.
const (
	// queueBuilt is the median queueing delay of either probe class from
	// which a queue counts as built when nothing marks CE (a marking AQM
	// is told by its marks, whatever its target). Tail drop fills a
	// buffer of tens of milliseconds or more; a path that only carries
	// the load without a queue of its own (a policer, a buffer of a
	// packet or two, a bottleneck beyond the rate cap) stays under it,
	// even when a busy client's scheduling adds a few milliseconds to
	// every probe's round trip.
	queueBuilt = 5 * time.Millisecond
	// ceSeen is the share of the L4S flow's packets arriving CE from
	// which the bottleneck marks ECN: an L4S AQM marks at a shallow
	// threshold (DualPI2's 1 ms step), a Classic-ECN one marks ECT(1) as
	// it would drop Not-ECT (CoDel marks a few per cent of a Prague flow
	// that hardly yields to its sparse marks); no marking AQM marks none,
	// so a few stray marks stay under it.
	ceSeen = 0.005
	// dualGap is how far the Classic probes' median queueing delay must
	// exceed the L4S probes' for two queues: with one queue both classes
	// wait alike, so they differ by noise only. The L4S median must also
	// be at most half the Classic one.
	dualGap = 2 * time.Millisecond
)

// LoadFigures are what the load test measured, the classification's
// input.
type LoadFigures struct {
	MaxRate float64 // bit/s, the cap on the load
	// Base is the lowest round trip of any probe, the path without a
	// queue.
	Base time.Duration
	// The probes' round trips after the warm-up, by class: ECT(1) probes
	// wait in an L4S queue, Not-ECT ones in a Classic queue.
	L4SP50, L4SP99, ClassicP50, ClassicP99 time.Duration
	L4SProbes, ClassicProbes               int // round trips measured
	// The flows, as their receiver counted them.
	L4SCE                float64 // CE / received, the L4S flow
	L4SLoss, ClassicLoss float64 // lost / (received + lost)
	L4SGoodput, CGoodput float64 // bit/s of payload acknowledged
	// Arrived is the flows' data packets as the responder counted them
	// (L4S, then classic), by codepoint (aqm.ECN index); ArrivedKnown is
	// false when the responder did not say.
	Arrived      [2][4]int
	ArrivedKnown bool
	// ProbesThere and ProbesBack are the RTT probes' replies (ECT(1)
	// probes, then Not-ECT) by the codepoint the probe arrived with at
	// the responder and the one its reply arrived back with.
	ProbesThere, ProbesBack [2][4]int
}

// Bottleneck is the load test's verdict: Kind names it, Detail gives the
// figures behind it in a line.
type Bottleneck struct {
	Kind   string `json:"verdict"`
	Detail string `json:"detail"`
	// PathFaults are the changes of the ECN field the load's packets
	// met during the load, one line each; any of them makes the path not
	// ready, whatever the bottleneck.
	PathFaults []string `json:"path_faults,omitempty"`
}

// Ready reports whether the verdict makes the path L4S-ready.
//
// A path the load did not saturate is not ready: the test saw no queue, so
// it cannot say what the bottleneck does, and a bottleneck elsewhere on
// the path (the case the load test exists to catch) looks just like that.
func (b Bottleneck) Ready() bool { return b.Kind == DualQueue && len(b.PathFaults) == 0 }

// Headline is the verdict as the table's one line; a verdict qualified by
// changes of the ECN field during the load says so after it.
func (b Bottleneck) Headline() string {
	var h string
	switch b.Kind {
	case DualQueue, TailDrop:
		h = b.Kind + " (" + b.Detail + ")"
	default:
		h = b.Kind + ": " + b.Detail
	}
	if b.Kind != ChangedUnderLoad && len(b.PathFaults) > 0 {
		h += "; but " + strings.Join(b.PathFaults, "; ")
	}
	return h
}

// CrossCheck qualifies b with the changes of the ECN field the load's
// packets met: the flows' as the responder counted them, the RTT probes'
// both ways. When the L4S flow or its probe did not arrive as ECT(1) the
// bottleneck never saw L4S traffic, so its verdict is withheld.
func CrossCheck(b Bottleneck, f LoadFigures) Bottleneck {
	var faults []string
	l4s := 0
	if f.ArrivedKnown {
		l4s += changes(&faults, "", aqm.ECT1, f.Arrived[0], "packets", "on the path")
		changes(&faults, "the classic flow's ", aqm.NotECT, f.Arrived[1], "packets", "on the path")
	}
	l4s += changes(&faults, "", aqm.ECT1, f.ProbesThere[0], "RTT probes", "on the path")
	changes(&faults, "", aqm.NotECT, f.ProbesThere[1], "RTT probes", "on the path")
	changes(&faults, "the replies to ", aqm.ECT1, f.ProbesBack[0], "RTT probes", "on the way back")
	changes(&faults, "the replies to ", aqm.NotECT, f.ProbesBack[1], "RTT probes", "on the way back")
	if len(faults) == 0 {
		return b
	}
	if l4s > 0 {
		return Bottleneck{Kind: ChangedUnderLoad, Detail: strings.Join(faults, "; ") + "; no bottleneck verdict: the L4S flow did not reach it as ECT(1)", PathFaults: faults}
	}
	b.PathFaults = faults
	return b
}

// changes adds a line to faults for each codepoint packets sent as sent
// arrived as that is not a valid change (valid: unchanged, or ECT marked
// CE), and returns how many packets changed so.
func changes(faults *[]string, whose string, sent aqm.ECN, arrived [4]int, what, where string) int {
	total := 0
	for _, n := range arrived {
		total += n
	}
	bad := 0
	for _, r := range order {
		n := arrived[r]
		if n == 0 || valid(sent, r) {
			continue
		}
		how := "re-marked"
		switch {
		case r == aqm.NotECT:
			how = "bleached"
		case r == aqm.CE:
			how = "mangled"
		}
		*faults = append(*faults, fmt.Sprintf("%s%v arrived as %v for %d of %d %s during the load: %s %s", whose, sent, r, n, total, what, how, where))
		bad += n
	}
	return bad
}

// Classify gives the verdict on a load test's figures. Whether a queue
// built decides saturation: an L4S flow that got CE marks, or either probe
// class waiting queueBuilt or more at the median. Then CE on the L4S flow
// tells an ECN-marking AQM from tail drop, and the two probe classes'
// medians tell two queues (L4S well below Classic) from one (alike).
// Medians decide, being steady under a loaded machine's scheduling noise;
// the lines report the 99th percentiles a user compares.
func Classify(f LoadFigures) Bottleneck {
	if f.L4SProbes == 0 && f.ClassicProbes == 0 {
		return Bottleneck{Kind: NotMeasured, Detail: notMeasDetail}
	}
	q := func(d time.Duration) time.Duration { return max(d-f.Base, 0) }
	qL, qC := q(f.L4SP50), q(f.ClassicP50)
	marked := f.L4SCE >= ceSeen
	ms := func(d time.Duration) string { return fmt.Sprintf("%.1f ms", figure.Ms(d)) }
	switch {
	case !marked && qL < queueBuilt && qC < queueBuilt:
		return Bottleneck{Kind: NotSaturated, Detail: fmt.Sprintf("%s: the load reached %.1f of %.1f Mbit/s with no queue (RTT p99 L4S %s, classic %s) and no CE",
			notSatDetail, (f.L4SGoodput+f.CGoodput)/1e6, f.MaxRate/1e6, ms(f.L4SP99), ms(f.ClassicP99))}
	case !marked:
		return Bottleneck{Kind: TailDrop, Detail: fmt.Sprintf("queue %s", ms(q(max(f.ClassicP99, f.L4SP99))))}
	case f.L4SProbes > 0 && f.ClassicProbes > 0 && qC-qL >= dualGap && 2*qL <= qC:
		return Bottleneck{Kind: DualQueue, Detail: fmt.Sprintf("L4S RTT p99 %s vs classic %s", ms(f.L4SP99), ms(f.ClassicP99))}
	}
	return Bottleneck{Kind: SingleQueue, Detail: fmt.Sprintf("%s: L4S RTT p99 %s vs classic %s, %.1f %% of the L4S flow CE",
		singleDetail, ms(f.L4SP99), ms(f.ClassicP99), 100*f.L4SCE)}
}
