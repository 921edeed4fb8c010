package check

import (
	"strings"
	"testing"
	"time"
)

// Each case is a bottleneck's figures as worked out from what it does,
// not from a run: DualPI2 holds the Classic queue at its 15 ms target and
// step-marks the L queue at 1 ms; CoDel with ECN holds one queue near its
// 5 ms target and marks ECT(1) like ECT(0); a FIFO fills its buffer (100
// packets of 1400 bytes at 10 Mbit/s: 112 ms) and drops; a tbf with a
// 3000-byte buffer in front of the hop queues 2.4 ms at most and drops.
// Without CE, a median queueing delay of 5 ms or more is a queue built.
func TestClassify(t *testing.T) {
	ms := func(f float64) time.Duration { return time.Duration(f * float64(time.Millisecond)) }
	base := LoadFigures{MaxRate: 100e6, Base: ms(1), L4SProbes: 300, ClassicProbes: 300, L4SGoodput: 4.8e6, CGoodput: 4.8e6}
	with := func(f func(*LoadFigures)) LoadFigures { c := base; f(&c); return c }
	for _, tc := range []struct {
		name  string
		f     LoadFigures
		kind  string
		ready bool
		line  string // the headline, whole
	}{
		{"DualPI2", with(func(f *LoadFigures) {
			f.L4SP50, f.L4SP99, f.ClassicP50, f.ClassicP99, f.L4SCE, f.ClassicLoss = ms(1.6), ms(3.2), ms(16), ms(24.5), 0.2, 0.01
		}), DualQueue, true, "L4S dual-queue AQM (L4S RTT p99 3.2 ms vs classic 24.5 ms)"},
		{"DualPI2 at the edge: L4S median 3 ms over base, classic 6 (gap 3, twice)", with(func(f *LoadFigures) {
			f.L4SP50, f.L4SP99, f.ClassicP50, f.ClassicP99, f.L4SCE = ms(4), ms(5), ms(7), ms(9), 0.3
		}), DualQueue, true, "L4S dual-queue AQM (L4S RTT p99 5.0 ms vs classic 9.0 ms)"},
		{"gap of 2 ms but L4S more than half of classic: one queue", with(func(f *LoadFigures) {
			f.L4SP50, f.L4SP99, f.ClassicP50, f.ClassicP99, f.L4SCE = ms(4.5), ms(6), ms(6.5), ms(8), 0.05
		}), SingleQueue, false, "single-queue Classic-ECN AQM: L4S traffic gets classic treatment: L4S RTT p99 6.0 ms vs classic 8.0 ms, 5.0 % of the L4S flow CE"},
		{"CoDel with ECN", with(func(f *LoadFigures) {
			f.L4SP50, f.L4SP99, f.ClassicP50, f.ClassicP99, f.L4SCE, f.ClassicLoss = ms(6), ms(11), ms(6.2), ms(11.5), 0.02, 0.01
		}), SingleQueue, false, "single-queue Classic-ECN AQM: L4S traffic gets classic treatment: L4S RTT p99 11.0 ms vs classic 11.5 ms, 2.0 % of the L4S flow CE"},
		{"CoDel with ECN marking 0.5 %", with(func(f *LoadFigures) {
			f.L4SP50, f.L4SP99, f.ClassicP50, f.ClassicP99, f.L4SCE = ms(6), ms(11), ms(6.2), ms(11.5), 0.005
		}), SingleQueue, false, "single-queue Classic-ECN AQM: L4S traffic gets classic treatment: L4S RTT p99 11.0 ms vs classic 11.5 ms, 0.5 % of the L4S flow CE"},
		{"FIFO of 112 ms", with(func(f *LoadFigures) {
			f.L4SP50, f.L4SP99, f.ClassicP50, f.ClassicP99, f.L4SLoss, f.ClassicLoss = ms(90), ms(112), ms(95), ms(113), 0.02, 0.02
		}), TailDrop, false, "no AQM: tail drop (queue 112.0 ms)"},
		{"CE under 0.5 %: no marking AQM", with(func(f *LoadFigures) {
			f.L4SP50, f.L4SP99, f.ClassicP50, f.ClassicP99, f.L4SCE = ms(40), ms(61), ms(41), ms(60), 0.0049
		}), TailDrop, false, "no AQM: tail drop (queue 60.0 ms)"},
		{"tbf of 2.4 ms in front", with(func(f *LoadFigures) {
			f.L4SP50, f.L4SP99, f.ClassicP50, f.ClassicP99, f.L4SLoss, f.ClassicLoss = ms(2.5), ms(3.4), ms(2.6), ms(3.4), 0.03, 0.03
		}), NotSaturated, false, "not saturated: the bottleneck is beyond --max-rate or elsewhere: the load reached 9.6 of 100.0 Mbit/s with no queue (RTT p99 L4S 3.4 ms, classic 3.4 ms) and no CE"},
		{"beyond the cap: the load at its cap, no queue", with(func(f *LoadFigures) {
			f.MaxRate, f.L4SGoodput, f.CGoodput = 10e6, 4.7e6, 4.7e6
			f.L4SP50, f.L4SP99, f.ClassicP50, f.ClassicP99 = ms(1.1), ms(1.5), ms(1.1), ms(1.6)
		}), NotSaturated, false, "not saturated: the bottleneck is beyond --max-rate or elsewhere: the load reached 9.4 of 10.0 Mbit/s with no queue (RTT p99 L4S 1.5 ms, classic 1.6 ms) and no CE"},
		{"a queue of exactly 5 ms counts as built", with(func(f *LoadFigures) {
			f.L4SP50, f.L4SP99, f.ClassicP50, f.ClassicP99 = ms(6), ms(7), ms(6), ms(7)
		}), TailDrop, false, "no AQM: tail drop (queue 6.0 ms)"},
		{"4.9 ms with no CE: no queue (a busy client's probes)", with(func(f *LoadFigures) {
			f.L4SP50, f.L4SP99, f.ClassicP50, f.ClassicP99 = ms(5.9), ms(9), ms(5.8), ms(9)
		}), NotSaturated, false, "not saturated: the bottleneck is beyond --max-rate or elsewhere: the load reached 9.6 of 100.0 Mbit/s with no queue (RTT p99 L4S 9.0 ms, classic 9.0 ms) and no CE"},
		{"CE with no queue: marked, one queue", with(func(f *LoadFigures) {
			f.L4SP50, f.L4SP99, f.ClassicP50, f.ClassicP99, f.L4SCE = ms(1.2), ms(2), ms(1.3), ms(2), 0.5
		}), SingleQueue, false, "single-queue Classic-ECN AQM: L4S traffic gets classic treatment: L4S RTT p99 2.0 ms vs classic 2.0 ms, 50.0 % of the L4S flow CE"},
		{"no classic probe back: no dual verdict", with(func(f *LoadFigures) {
			f.ClassicProbes, f.L4SP50, f.L4SP99, f.L4SCE = 0, ms(1.5), ms(3), 0.2
		}), SingleQueue, false, "single-queue Classic-ECN AQM: L4S traffic gets classic treatment: L4S RTT p99 3.0 ms vs classic 0.0 ms, 20.0 % of the L4S flow CE"},
		{"no probe back at all", with(func(f *LoadFigures) { f.L4SProbes, f.ClassicProbes = 0, 0 }),
			NotMeasured, false, "not measured: no probe came back during the load"},
	} {
		b := Classify(tc.f)
		if b.Kind != tc.kind || b.Ready() != tc.ready || b.Headline() != tc.line {
			t.Errorf("%s: %q ready %v, headline\n %q\nwant %q ready %v\n %q", tc.name, b.Kind, b.Ready(), b.Headline(), tc.kind, tc.ready, tc.line)
		}
		if strings.Contains(b.Headline(), "%!") {
			t.Errorf("%s: bad format: %s", tc.name, b.Headline())
		}
	}
}

// CrossCheck against the counts of what the load's packets arrived as
// (aqm.ECN index: Not-ECT, ECT(1), ECT(0), CE). A changed L4S flow or
// ECT(1) probe withholds the bottleneck's verdict, whatever Classify
// said; any other change qualifies it; valid arrivals (unchanged, or ECT
// marked CE) change nothing. Every case is not ready but the clean one.
func TestCrossCheck(t *testing.T) {
	dual := Bottleneck{Kind: DualQueue, Detail: "L4S RTT p99 3.2 ms vs classic 24.5 ms"}
	single := Bottleneck{Kind: SingleQueue, Detail: "L4S traffic gets classic treatment: L4S RTT p99 20.0 ms vs classic 21.0 ms, 3.0 % of the L4S flow CE"}
	clean := LoadFigures{ArrivedKnown: true, Arrived: [2][4]int{{0, 900, 0, 100}, {500, 0, 0, 0}},
		ProbesThere: [2][4]int{{0, 280, 0, 20}, {300, 0, 0, 0}}, ProbesBack: [2][4]int{{0, 300, 0, 0}, {300, 0, 0, 0}}}
	with := func(f func(*LoadFigures)) LoadFigures { c := clean; f(&c); return c }
	const withheld = "; no bottleneck verdict: the L4S flow did not reach it as ECT(1)"
	for _, tc := range []struct {
		name  string
		b     Bottleneck
		f     LoadFigures
		kind  string
		ready bool
		line  string
	}{
		{"clean dual queue", dual, clean, DualQueue, true, "L4S dual-queue AQM (L4S RTT p99 3.2 ms vs classic 24.5 ms)"},
		{"responder without counts: the probes alone", dual, with(func(f *LoadFigures) { f.ArrivedKnown, f.Arrived = false, [2][4]int{} }),
			DualQueue, true, "L4S dual-queue AQM (L4S RTT p99 3.2 ms vs classic 24.5 ms)"},
		// The case: re-marked after the transitions, the L4S flow
		// reaches DualPI2 as ECT(0) and reads as one queue.
		{"L4S flow re-marked during the load", single, with(func(f *LoadFigures) {
			f.Arrived[0] = [4]int{0, 300, 700, 0}
			f.ProbesThere[0] = [4]int{0, 90, 210, 0}
		}), ChangedUnderLoad, false, ChangedUnderLoad + ": ECT(1) arrived as ECT(0) for 700 of 1000 packets during the load: re-marked on the path; " +
			"ECT(1) arrived as ECT(0) for 210 of 300 RTT probes during the load: re-marked on the path" + withheld},
		{"L4S flow bleached", dual, with(func(f *LoadFigures) { f.Arrived[0] = [4]int{5, 895, 0, 100} }),
			ChangedUnderLoad, false, ChangedUnderLoad + ": ECT(1) arrived as Not-ECT for 5 of 1000 packets during the load: bleached on the path" + withheld},
		{"ECT(1) probes re-marked, flow not", dual, with(func(f *LoadFigures) { f.ProbesThere[0] = [4]int{0, 299, 1, 0} }),
			ChangedUnderLoad, false, ChangedUnderLoad + ": ECT(1) arrived as ECT(0) for 1 of 300 RTT probes during the load: re-marked on the path" + withheld},
		{"classic flow made ECT(1): qualified", dual, with(func(f *LoadFigures) { f.Arrived[1] = [4]int{400, 100, 0, 0} }),
			DualQueue, false, "L4S dual-queue AQM (L4S RTT p99 3.2 ms vs classic 24.5 ms); but the classic flow's Not-ECT arrived as ECT(1) for 100 of 500 packets during the load: re-marked on the path"},
		{"replies re-marked on the way back: qualified", dual, with(func(f *LoadFigures) { f.ProbesBack[0] = [4]int{0, 250, 50, 0} }),
			DualQueue, false, "L4S dual-queue AQM (L4S RTT p99 3.2 ms vs classic 24.5 ms); but the replies to ECT(1) arrived as ECT(0) for 50 of 300 RTT probes during the load: re-marked on the way back"},
		{"Not-ECT probe marked CE: mangled", dual, with(func(f *LoadFigures) { f.ProbesThere[1] = [4]int{299, 0, 0, 1} }),
			DualQueue, false, "L4S dual-queue AQM (L4S RTT p99 3.2 ms vs classic 24.5 ms); but Not-ECT arrived as CE for 1 of 300 RTT probes during the load: mangled on the path"},
	} {
		b := CrossCheck(tc.b, tc.f)
		if b.Kind != tc.kind || b.Ready() != tc.ready || b.Headline() != tc.line {
			t.Errorf("%s: %q ready %v, headline\n %q\nwant %q ready %v\n %q", tc.name, b.Kind, b.Ready(), b.Headline(), tc.kind, tc.ready, tc.line)
		}
		if tc.kind == ChangedUnderLoad && strings.Contains(b.Headline(), SingleQueue) {
			t.Errorf("%s: a withheld verdict names %q", tc.name, SingleQueue)
		}
	}
}
