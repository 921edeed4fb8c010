package prague

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/pi2hop/pi2hop/aqm"
)

// ecnPathRun is what runFaulted measures.
type ecnPathRun struct {
	failed        bool
	reason        ECNReason
	at            int64   // µs of the failure
	firstAffected int64   // µs of the first ACK of a packet the fault touched; -1 if none
	srtt          int64   // µs, the controller's at the failure
	util          float64 // link busy share over the measured span
	pragueBps     float64 // payload acknowledged per second over it
}

// runFaulted runs one Prague flow with ECN validation through the aqm
// package's DualPI2 (kernel defaults) on a link of mbit Mbit/s (IP bytes)
// with a 20 ms base RTT after the bottleneck, for end µs of virtual time.
// From faultFrom µs on, fault rewrites (or drops) every packet's
// codepoint before the queue (an upstream middlebox: the queue classifies
// by what it sees) or, with after, between the queue and the receiver (a
// downstream one: the queue's marks can be lost). The receiver counts
// arrivals by codepoint and ACKs each packet with its cumulative counters
// and counts, as flow's receiver does (type 17 with the ECN extension);
// the sender stalls after TimeoutAfter without an ACK while its window is
// full, as flow's sender does. The link loses a share loss of the packets
// it sends, at random. Utilisation is measured from measureFrom µs.
func runFaulted(t *testing.T, mbit, loss float64, fault pathFault, after bool, faultFrom, measureFrom, end int64) ecnPathRun {
	t.Helper()
	return runLoaded(t, mbit, loss, 0, fault, after, faultFrom, measureFrom, end)
}

// runLoaded is runFaulted with, beside the Prague flow, an unresponsive
// Not-ECT flow of 1500-byte packets sent at classic times the link's rate
// (0: none) into the Classic queue; the link's utilisation counts both.
func runLoaded(t *testing.T, mbit, loss, classic float64, fault pathFault, after bool, faultFrom, measureFrom, end int64) ecnPathRun {
	t.Helper()
	const (
		rtt = 20000 // µs
		hdr = 28    // IPv4 + UDP
	)
	type event struct {
		at, rtt  int64
		seq      int32
		affected bool
		fb       Feedback
		ef       ECNFeedback
	}
	rate := mbit * 1e6 / 8
	q, err := aqm.NewDualPI2(aqm.DefaultConfig(), rand.New(rand.NewPCG(3, 4)))
	if err != nil {
		t.Fatal(err)
	}
	cc, err := New(Config{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	v := NewValidator(aqm.ECT1)
	rng := rand.New(rand.NewPCG(5, 6))
	var (
		now, next, linkFree, lastACK int64
		nextClassic                  float64 // µs
		linkAt                       float64
		fb                           Feedback
		counts                       ECNCounts
		recvNext                     int32 = 1
		events                       []event
		sentAs                       [1 << 16]aqm.ECN
		busy, acked                  float64
		seq                          int32
		r                            = ecnPathRun{firstAffected: -1}
	)
	// deliver hands packet s, arriving with codepoint got, to the receiver.
	deliver := func(s int32, got aqm.ECN, sentAt, done int64, affected bool) {
		fb.Lost += s - recvNext // gaps count as lost, as the receiver's
		recvNext = s + 1
		fb.Received++
		switch got {
		case aqm.ECT0:
			counts.ECT0++
		case aqm.ECT1:
			counts.ECT1++
		case aqm.CE:
			counts.CE++
			fb.CE++
		}
		events = append(events, event{at: done + rtt, rtt: done + rtt - sentAt, seq: s, affected: affected, fb: fb,
			ef: ECNFeedback{Received: int64(fb.Received), Lost: int64(fb.Lost), Counts: counts, HasCounts: true}})
	}
	for now < end {
		faulty := now >= faultFrom
		q.Advance(now * 1000)
		for now >= linkFree {
			m, verdict, ok := q.Dequeue(now * 1000)
			if !ok {
				break
			}
			if verdict.Action == aqm.Drop {
				continue // the receiver counts the gap
			}
			tx := float64(m.Len) / rate * 1e6
			linkAt = max(linkAt, float64(now)) + tx
			done := int64(math.Ceil(linkAt))
			linkFree = done
			sentAt := m.Arrival / 1000
			if sentAt >= measureFrom {
				busy += tx
				if m.Flow != 2 {
					acked += float64(m.Len - hdr)
				}
			}
			if m.Flow == 2 {
				continue // the classic load: nobody acknowledges it
			}
			if loss > 0 && rng.Float64() < loss {
				continue // lost on the link: the receiver counts the gap
			}
			got, affected := m.ECN, m.Flow == 1
			if verdict.Action == aqm.Mark {
				got = aqm.CE
			}
			if after && faulty {
				was := got
				var drop bool
				if got, drop = fault(sentAs[uint16(m.Slot)], got); drop {
					continue
				}
				affected = affected || got != was
			}
			deliver(m.Slot, got, sentAt, done, affected)
		}
		for len(events) > 0 && events[0].at <= now {
			e := events[0]
			events = events[1:]
			cc.RTT(e.rtt)
			v.RTT(now, e.rtt)
			v.Acked(e.seq)
			if e.affected && r.firstAffected < 0 {
				r.firstAffected = now
			}
			if v.Feedback(now, e.ef) && !r.failed {
				r.failed = true
				r.reason, r.at = v.Failure()
				r.srtt = cc.Info(now).SRTT
				cc.FallBack()
			}
			cc.ACK(now, e.fb)
			lastACK = now
		}
		for classic > 0 && float64(now) >= nextClassic {
			q.Enqueue(aqm.Meta{ECN: aqm.NotECT, Len: 1500, Flow: 2}, now*1000)
			nextClassic += 1500 / (classic * rate) * 1e6
		}
		info := cc.Info(now)
		if cc.Inflight() >= info.PacketWindow && now-lastACK >= TimeoutAfter {
			v.Stalled()
			cc.Timeout(now)
			lastACK = now
			info = cc.Info(now)
		}
		if cc.Inflight() < info.PacketWindow && now >= next {
			for i := 0; i < info.PacketBurst && cc.Inflight() < info.PacketWindow; i++ {
				seq++
				e := v.Send(seq)
				cc.Sent(1)
				sentAs[uint16(seq)] = e
				next = max(next, now-BurstTime) + int64(float64(info.PacketSize)/info.PacingRate*1e6)
				m := aqm.Meta{ECN: e, Len: int32(info.PacketSize + hdr), Slot: seq}
				if !after && faulty {
					got, drop := fault(e, e)
					if drop {
						continue
					}
					if got != e {
						m.ECN, m.Flow = got, 1 // Flow marks the packet as touched
					}
				}
				q.Enqueue(m, now*1000)
			}
		}
		wake := min(end, q.NextUpdate()/1000)
		if n, _ := q.Len(); n > 0 {
			wake = min(wake, max(linkFree, now))
		}
		if len(events) > 0 {
			wake = min(wake, events[0].at)
		}
		if classic > 0 {
			wake = min(wake, int64(math.Ceil(nextClassic)))
		}
		if cc.Inflight() < cc.Info(now).PacketWindow {
			wake = min(wake, next)
		} else {
			wake = min(wake, lastACK+TimeoutAfter)
		}
		now = max(wake, now+1)
	}
	secs := float64(end-measureFrom) / 1e6
	r.util, r.pragueBps = busy/float64(end-measureFrom), acked/secs
	return r
}

// Closed loop, per fault kind, from the start and from 10 s on, before the
// queue and after it, at 10 and 50 Mbit/s and a 20 ms RTT: the faults that touch
// an ECT(1) flow are detected with the reason the counts give (see
// TestValidatorFaults), within the test period at the start (the first
// 10 packets and their ACKs: under 0.5 s at Prague's starting rate) or
// within 3 RTTs of the first ACK of a faulted packet (drop-ect mid-flow
// leaves no ACK to see: the sender's 1 s stall, then six rounds of
// re-testing, each an ECT packet and a Not-ECT one sent at the pace the
// controller restarts with and the latter's ACK: up to 4 RTTs); after
// the fallback the flow, Not-ECT in the Classic queue with its loss-only
// response, keeps at least 80 % of the link over the last 20 s. none, ect0-to-ect1 (no ECT(0) sent) and ce-bleach (the
// counts are valid: only the RTT can tell) never fall back, and keep the
// link busy too (ce-bleach through DualPI2's overload drops: the L queue
// grows unmarked until its delay drives the coupled probability past it).
func TestFaultedPathFallback(t *testing.T) {
	const (
		faultAt = 10e6
		measure = 20e6
		end     = 40e6
	)
	tests := []struct {
		fault  string
		reason ECNReason
	}{
		{"none", ReasonNone},
		{"bleach", ReasonBleached},
		{"tos-zero", ReasonBleached},
		{"ect1-to-ect0", ReasonRemarked},
		{"ect0-to-ect1", ReasonNone},
		{"ce-bleach", ReasonNone},
		{"mangle", ReasonMangled},
		{"drop-ect", ReasonECTDropped},
	}
	for _, tt := range tests {
		for _, c := range []struct {
			mbit  float64
			after bool
			from  int64
		}{{10, false, 0}, {10, false, faultAt}, {10, true, 0}, {10, true, faultAt}, {50, false, 0}, {50, true, faultAt}} {
			{
				mbit, after, from := c.mbit, c.after, c.from
				where := "before"
				if after {
					where = "after"
				}
				r := runFaulted(t, mbit, 0, pathFaults[tt.fault], after, from, measure, end)
				t.Logf("%2.0f Mbit/s %-12s %-6s from %2.0f s: failed %v %q at %.3f s (first affected ACK %.3f s, srtt %.1f ms); utilisation %.1f %%",
					mbit, tt.fault, where, float64(from)/1e6, r.failed, r.reason, float64(r.at)/1e6, float64(r.firstAffected)/1e6, float64(r.srtt)/1e3, r.util*100)
				if r.reason != tt.reason {
					t.Errorf("%v Mbit/s, %s %s the queue from %.0f s: reason %q, want %q", mbit, tt.fault, where, float64(from)/1e6, r.reason, tt.reason)
					continue
				}
				if r.util < 0.80 {
					t.Errorf("%v Mbit/s, %s %s the queue from %.0f s: utilisation %.3f over the last 20 s, want >= 0.80", mbit, tt.fault, where, float64(from)/1e6, r.util)
				}
				if !r.failed {
					continue
				}
				switch {
				case from == 0 && r.at > 500e3:
					t.Errorf("%s %s from the start: detected at %.3f s, want within the test period (0.5 s)", tt.fault, where, float64(r.at)/1e6)
				case from > 0 && tt.fault == "drop-ect" && r.at-from > TimeoutAfter+retestRounds*4*r.srtt:
					t.Errorf("%s %s from %.0f s: detected %.3f s later, want within the 1 s stall and %d rounds of re-testing of 4 RTTs each", tt.fault, where, float64(from)/1e6, float64(r.at-from)/1e6, retestRounds)
				case from > 0 && tt.fault != "drop-ect" && r.at-r.firstAffected > 3*r.srtt:
					t.Errorf("%s %s from %.0f s: detected %.1f ms after the first affected ACK, want within 3 RTTs (%.1f ms)",
						tt.fault, where, float64(from)/1e6, float64(r.at-r.firstAffected)/1e3, 3*float64(r.srtt)/1e3)
				}
			}
		}
	}
}

// With no fault, random loss on the link (1 % and 3 %) never makes the
// validation fail: losses are not ECN faults, and no test packet round is
// lost whole.
func TestCleanLossyPathNoFallback(t *testing.T) {
	for _, loss := range []float64{0.01, 0.03} {
		r := runFaulted(t, 10, loss, pathFaults["none"], false, 0, 20e6, 40e6)
		t.Logf("%.0f %% loss: failed %v %q, utilisation %.1f %%", loss*100, r.failed, r.reason, r.util*100)
		if r.failed {
			t.Errorf("%.0f %% random loss, no fault: validation failed (%q at %.3f s)", loss*100, r.reason, float64(r.at)/1e6)
		}
	}
}

// DualPI2's coupling is no fault: beside an unresponsive classic flow
// that keeps the Classic queue's p' near or past 1/k (the L4S flow marked
// with k·p' close to 1, at the base RTT since its own queue stays empty,
// and in overload, past it, dropped as well at p'^2), the validator never
// fails over 30 s.
func TestCoupledSaturationIsNoFault(t *testing.T) {
	for _, classic := range []float64{1.1, 1.2, 1.3, 1.4, 2} {
		r := runLoaded(t, 10, 0, classic, pathFaults["none"], false, 0, 10e6, 30e6)
		t.Logf("classic at %.1f× the link: failed %v %q at %.3f s, utilisation %.1f %%", classic, r.failed, r.reason, float64(r.at)/1e6, r.util*100)
		if r.failed {
			t.Errorf("classic load at %.1f× the link, no fault: validation failed (%q at %.3f s)", classic, r.reason, float64(r.at)/1e6)
		}
	}
}
