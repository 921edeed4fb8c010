package hop

import (
	"testing"
	"time"

	"github.com/pi2hop/pi2hop/aqm"
)

// Every queue kind through the live hop, with an unresponsive ECT(1) flow
// and then a Not-ECT flow offered at twice the 10 Mbit/s rate, each
// judged by its own queue's rules:
//   - codel (ecn) and fq_codel (ecn by default): ECT(1) is only ever
//     CE-marked by CoDel, never dropped by it; Not-ECT is CoDel-dropped;
//   - pie (ecn): ECT(1) is marked while p <= 10 % and dropped above it,
//     which an unresponsive flow at twice the rate reaches (p ~ 50 %);
//   - docsis: ECT(1) meets the L-queue ramp (marks) and Queue Protection
//     (sanctions to the C-queue, where they fill the queue until k·p' > 1
//     and DualPI2's overload rule drops them); Not-ECT is Classic and
//     dropped by p'².
//
// In all, Not-ECT is never marked and the hop's counters balance. Between
// the floods the hop drains, so each count is of one flood only.
func TestPairQueueKinds(t *testing.T) {
	needRoot(t)
	const bps = 10_000_000
	for _, tc := range []struct {
		kind   string
		mod    func(*aqm.Spec)
		ectAQM aqm.Reason // the reason of the AQM's drops of ECT(1), or ReasonNone: none allowed
		notECT aqm.Reason // the reason Not-ECT packets are dropped for
	}{
		{aqm.KindCoDel, func(s *aqm.Spec) { s.CoDel.ECN = true }, aqm.ReasonNone, aqm.ReasonCodel},
		{aqm.KindPIE, func(s *aqm.Spec) { s.PIE.ECN = true }, aqm.ReasonPIE, aqm.ReasonPIE},
		{aqm.KindFQCodel, nil, aqm.ReasonNone, aqm.ReasonCodel},
		// Sanctioned ECT(1) packets fill the C-queue: p' rises until
		// k·p' > 1, where DualPI2's overload rule drops instead of marking.
		{aqm.KindDOCSIS, func(s *aqm.Spec) { s.DOCSIS.Rate = bps }, aqm.ReasonOverload, aqm.ReasonClassic},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			cfg := testConfig(bps, 0)
			spec, _ := aqm.DefaultSpec(tc.kind)
			if tc.mod != nil {
				tc.mod(&spec)
			}
			cfg.Up.Queue, cfg.Down.Queue = spec, spec
			p := newTestPair(t, cfg)

			got := ecnFlood(t, p, false, aqm.ECT1, 2*bps, 3*time.Second, nil)
			s := p.Hop.Stats().Up
			t.Logf("ECT(1) at 2x: received ECT(1) %d CE %d; hop marked %d, drops %v, queue %+v",
				got[aqm.ECT1], got[aqm.CE], s.Marked, s.QueueDrops, s.Queue.QProt)
			if got[aqm.CE] == 0 || uint64(got[aqm.CE]) > s.Marked {
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
			checkBalance(t, s)
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
			checkBalance(t, s)
		})
	}
}

// waitDrained waits until the uplink holds no packet, at most d.
func waitDrained(t *testing.T, p *Pair, d time.Duration) DirStats {
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
