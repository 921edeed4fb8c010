package hop_test

import (
	"errors"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/hop"
	"github.com/pi2hop/pi2hop/internal/roottest"
	"github.com/pi2hop/pi2hop/pcap"
)

// Every queue kind through the live hop, with an unresponsive ECT(1) flow
// and then a Not-ECT flow offered at twice the 10 Mbit/s rate, each
// judged by its own queue's rules:
//   - fifo (100 packets, 120 ms at this rate): nothing is marked, every
//     drop is a tail drop at the limit;
//   - dualpi2: ECT(1) is marked (step, coupled) and, as p' rises into
//     overload (k·p' > 1), dropped for it (RFC 9332 §4.2.3); Not-ECT is
//     dropped with p'²;
//   - codel (ecn) and fq_codel (ecn by default): ECT(1) is only ever
//     CE-marked by CoDel, never dropped by it; Not-ECT is CoDel-dropped;
//   - pie (ecn): ECT(1) is marked while p <= 10 % and dropped above it,
//     which an unresponsive flow at twice the rate reaches (p ~ 50 %);
//   - docsis: ECT(1) meets the L-queue ramp (marks) and Queue Protection
//     (sanctions to the C-queue, where they fill the queue until
//     DOCSIS-PIE's p_C passes 10 % and PIE's ECN rule drops them as
//     overload); Not-ECT is Classic and dropped by DOCSIS-PIE.
//
// In all, Not-ECT is never marked and the hop's counters balance. Between
// the floods the hop drains, so each count is of one flood only. Both
// floods are captured (pcap.HopTap), and the capture's annotations must
// count exactly what the hop's and the queue's counters count
// (checkCaptureMatches).
func TestPairQueueKinds(t *testing.T) {
	roottest.Need(t)
	const bps = 10_000_000
	for _, tc := range []struct {
		kind     string
		mod      func(*aqm.Spec)
		ectMarks bool       // ECT(1) is CE-marked
		ectAQM   aqm.Reason // the reason of the AQM's drops of ECT(1), or ReasonNone: none allowed
		notECT   aqm.Reason // the reason Not-ECT packets are dropped for
	}{
		// 100 packets fill in 0.1 s of a 2x flood: tail drops for sure.
		{aqm.KindFIFO, func(s *aqm.Spec) { s.FIFO.Limit = 100 }, false, aqm.ReasonNone, aqm.ReasonLimit},
		{aqm.KindDualPI2, nil, true, aqm.ReasonOverload, aqm.ReasonClassic},
		{aqm.KindCoDel, func(s *aqm.Spec) { s.CoDel.ECN = true }, true, aqm.ReasonNone, aqm.ReasonCodel},
		{aqm.KindPIE, func(s *aqm.Spec) { s.PIE.ECN = true }, true, aqm.ReasonPIE, aqm.ReasonPIE},
		{aqm.KindFQCodel, nil, true, aqm.ReasonNone, aqm.ReasonCodel},
		// Sanctioned ECT(1) packets fill the C-queue: p_C rises past
		// 10 %, where DOCSIS-PIE drops ECN-capable packets as overload.
		{aqm.KindDOCSIS, func(s *aqm.Spec) { s.DOCSIS.Rate = bps }, true, aqm.ReasonOverload, aqm.ReasonClassic},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			// Counts marks and drops by reason, no rates or delays: the
			// kinds run side by side, each in namespaces of its own.
			t.Parallel()
			cfg := hop.TestConfig(bps, 0)
			spec, _ := aqm.DefaultSpec(tc.kind)
			if tc.mod != nil {
				tc.mod(&spec)
			}
			cfg.Up.Queue, cfg.Down.Queue = spec, spec
			path := filepath.Join(t.TempDir(), "kinds.pcapng")
			capt, err := pcap.NewCapture(path, pcap.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { capt.Close() })
			p := newTestPairWith(t, cfg, pcap.NewHopTap(capt, ""))

			got := ecnFlood(t, p, false, aqm.ECT1, 2*bps, 3*time.Second, nil)
			s := p.Hop.Stats().Up
			t.Logf("ECT(1) at 2x: received ECT(1) %d CE %d; hop marked %d, drops %v, queue %+v",
				got[aqm.ECT1], got[aqm.CE], s.Marked, s.QueueDrops, s.Queue.QProt)
			if !tc.ectMarks {
				if got[aqm.CE] != 0 || s.Marked != 0 {
					t.Errorf("%d CE at the receiver, %d marked by the hop: %s does not mark", got[aqm.CE], s.Marked, tc.kind)
				}
			} else if got[aqm.CE] == 0 || uint64(got[aqm.CE]) > s.Marked {
				t.Errorf("%d CE at the receiver, %d marked by the hop; want some, no more than marked", got[aqm.CE], s.Marked)
			}
			for r, n := range s.QueueDrops {
				why := aqm.Reason(r)
				if n > 0 && why != aqm.ReasonLimit && why != tc.ectAQM {
					t.Errorf("ECT(1) dropped %d times for %v: %s does not drop ECN-capable packets for that", n, why, tc.kind)
				}
			}
			if tc.ectAQM != aqm.ReasonNone && s.QueueDrops[tc.ectAQM] == 0 {
				t.Errorf("no %v drops of an unresponsive ECT(1) flow at twice the rate", tc.ectAQM)
			}
			if tc.kind == aqm.KindDOCSIS && (s.Queue.QProt.SanctionedPackets == 0 || s.Queue.QProt.SanctionedFlows == 0) {
				t.Errorf("queue protection sanctioned nothing: %+v", s.Queue.QProt)
			}
			hop.CheckBalance(t, s)
			// The first flood's backlog (a full CoDel limit, or seconds
			// of fq_codel's) must leave before the second one is counted.
			s = waitDrained(t, p, 10*time.Second)

			marked0, drops0 := s.Marked, s.QueueDrops
			got = ecnFlood(t, p, false, aqm.NotECT, 2*bps, 2*time.Second, nil)
			s = p.Hop.Stats().Up
			t.Logf("Not-ECT at 2x: received %v; drops %v", got, s.QueueDrops)
			if got[aqm.CE] != 0 || s.Marked != marked0 {
				t.Errorf("Not-ECT packets marked: %d CE received, hop marks %d -> %d", got[aqm.CE], marked0, s.Marked)
			}
			if s.QueueDrops[tc.notECT] == drops0[tc.notECT] {
				t.Errorf("no %v drops of Not-ECT offered at twice the rate", tc.notECT)
			}
			hop.CheckBalance(t, s)

			// Closed, the hop has published its last counters and the
			// capture holds every packet it tapped.
			if err := p.Close(); err != nil {
				t.Fatal(err)
			}
			final := p.Hop.Stats()
			if err := capt.Close(); err != nil {
				t.Fatal(err)
			}
			for _, st := range capt.Stats() {
				if st.Dropped != 0 {
					t.Fatalf("capture dropped %d records at %s: an exact comparison is impossible", st.Dropped, st.Name)
				}
			}
			checkCaptureMatches(t, path, final)
		})
	}
}

// tapCounts is what a capture's annotations say of one direction: the
// in tap's packets, and each decision at the out and drop taps.
type tapCounts struct {
	in, out, marked uint64
	marksBy         [aqm.NumReasons]uint64 // out tap, verdict marked
	passBy          [aqm.NumReasons]uint64 // out tap, verdict sent (docsis: sanction)
	dropsBy         [aqm.NumReasons]uint64 // drop tap, verdict dropped
	writeErrors     uint64                 // drop tap with a sent or marked verdict: the device refused it
	class           [2]aqm.ClassCounters   // by the annotation's queue: C, L (Sent, Marked, Dropped)
	unannotated     uint64                 // out or drop packets without a decision
}

// readTaps counts the annotations of the capture at path by direction
// ("up", "down").
func readTaps(t *testing.T, path string) map[string]*tapCounts {
	t.Helper()
	r, err := pcap.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	dirs := map[string]*tapCounts{"up": {}, "down": {}}
	for {
		pkt, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("reading the capture: %v", err)
		}
		dir, point, ok := strings.Cut(pkt.Interface, "-")
		c := dirs[dir]
		if !ok || c == nil {
			t.Fatalf("capture interface %q is none of the hop's taps", pkt.Interface)
		}
		if point == "in" {
			c.in++
			continue
		}
		a := pkt.Ann
		if !pkt.HasAnn || !a.HasDecision {
			c.unannotated++
			continue
		}
		cc := &c.class[0]
		if a.Verdict.Class != aqm.Classic {
			cc = &c.class[1]
		}
		switch {
		case point == "drop" && a.Verdict.Action == aqm.Drop:
			c.dropsBy[a.Verdict.Reason]++
			cc.Dropped++
		case point == "drop":
			c.writeErrors++
		case a.Verdict.Action == aqm.Mark:
			c.out++
			c.marked++
			c.marksBy[a.Verdict.Reason]++
			cc.Sent++
			cc.Marked++
		default:
			c.out++
			c.passBy[a.Verdict.Reason]++
			cc.Sent++
		}
	}
	if r.Truncated != nil || r.BadComments != 0 {
		t.Fatalf("capture cut (%v) or with %d unreadable annotations", r.Truncated, r.BadComments)
	}
	return dirs
}

// checkCaptureMatches holds the capture at path to the hop's final
// counters s, direction by direction: packets in and out, CE marks, drops
// by reason (the hop's QueueDrops; a drop without a reason is a packet
// refused for want of a buffer), the queue's own per-class counters, and
// each kind's tc -s mark counters against the marks annotated with that
// kind's reasons. Every figure is an exact count on both sides (no CE
// arrives, so every mark verdict is a CE the hop set).
func checkCaptureMatches(t *testing.T, path string, s hop.Snapshot) {
	t.Helper()
	caps := readTaps(t, path)
	for _, ds := range []*hop.DirStats{&s.Up, &s.Down} {
		c := caps[ds.Dir.String()]
		t.Logf("%s capture: in %d out %d marked %d marks %v drops %v passes %v; hop: in %d out %d marked %d drops %v no-buffer %d",
			ds.Dir, c.in, c.out, c.marked, c.marksBy, c.dropsBy, c.passBy, ds.In, ds.Out, ds.Marked, ds.QueueDrops, ds.NoBuffer)
		eq := func(what string, capture, hop uint64) {
			if capture != hop {
				t.Errorf("%s %s: capture %d, hop %d", ds.Dir, what, capture, hop)
			}
		}
		// A packet refused for want of a buffer is tapped at drop only.
		eq("packets in (given a buffer)", c.in, ds.In-ds.NoBuffer)
		eq("packets out", c.out, ds.Out)
		eq("CE marks", c.marked, ds.Marked)
		eq("packets without a decision", c.unannotated, 0)
		eq("drops without a reason (no buffer)", c.dropsBy[aqm.ReasonNone], ds.NoBuffer)
		eq("write errors", c.writeErrors, ds.WriteErrors)
		for r := aqm.ReasonNone + 1; int(r) < aqm.NumReasons; r++ {
			eq("drops for "+r.String(), c.dropsBy[r], ds.QueueDrops[r])
		}
		q := ds.Queue
		for i, qc := range []aqm.ClassCounters{q.C, q.L} {
			name := [2]string{"C", "L"}[i]
			eq(name+"-queue sent", c.class[i].Sent, qc.Sent)
			eq(name+"-queue marked", c.class[i].Marked, qc.Marked)
			eq(name+"-queue dropped", c.class[i].Dropped, qc.Dropped)
		}
		// The kind's own tc -s figures, by the reasons that make them.
		switch q.Kind {
		case aqm.KindFIFO:
			eq("marks", c.marked, 0)
		case aqm.KindDualPI2:
			eq("step marks (step_marks)", c.marksBy[aqm.ReasonStep], q.StepMarks)
			// ecn_mark counts a packet the PI marked and the step marked
			// again twice (the kernel's second INET_ECN_set_ce on CE); its
			// verdict names the step.
			if q.ECNMark < c.marked || q.ECNMark > c.marked+q.StepMarks {
				t.Errorf("%s: ecn_mark %d, want between the %d marks annotated and those plus the %d step marks", ds.Dir, q.ECNMark, c.marked, q.StepMarks)
			}
		case aqm.KindCoDel:
			eq("control-law marks (ecn_mark)", c.marksBy[aqm.ReasonCodel], q.CoDel.ECNMark)
			eq("ce_threshold marks (ce_mark)", c.marksBy[aqm.ReasonCEThreshold], q.CoDel.CEMark)
		case aqm.KindFQCodel:
			eq("control-law marks (ecn_mark)", c.marksBy[aqm.ReasonCodel], q.FQ.ECNMark)
			eq("ce_threshold marks (ce_mark)", c.marksBy[aqm.ReasonCEThreshold], q.FQ.CEMark)
		case aqm.KindPIE:
			eq("marks (ecn_mark)", c.marksBy[aqm.ReasonPIE], q.PIE.ECNMark)
		case aqm.KindDOCSIS:
			// A sanctioned packet is counted when Queue Protection moves
			// it; it leaves annotated "sanction" unless the C-queue then
			// marks or drops it for its own reason.
			if n := c.passBy[aqm.ReasonSanction]; (ds.Dir == hop.Up && n == 0) || n > q.QProt.SanctionedPackets {
				t.Errorf("%s: %d packets sent annotated sanction, %d sanctioned; want some, no more", ds.Dir, n, q.QProt.SanctionedPackets)
			}
		default:
			t.Errorf("%s: queue kind %q has no mark counters to compare", ds.Dir, q.Kind)
		}
	}
}

// waitDrained waits until the uplink holds no packet, at most d.
func waitDrained(t *testing.T, p *testPair, d time.Duration) hop.DirStats {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		s := p.Hop.Stats().Up
		if s.Pending == 0 {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("uplink still holds %d packets after %v", s.Pending, d)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
