package prague

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/pi2hop/pi2hop/aqm"
)

// cubicFlow is a CUBIC (RFC 9438) window sender with full-size packets,
// Not-ECT, ACK-clocked (no pacing, as kernel cubic without fq): slow start,
// then W_cubic(t) = C·(t−K)³ + W_max with the Reno-friendly estimate, and
// on loss (once per window) W_max = cwnd, cwnd ·= β. Losses are noticed
// one RTT after the drop (what three duplicate ACKs take, near enough).
type cubicFlow struct {
	cwnd, ssthresh, wmax, west float64 // packets
	epoch                      int64   // µs: start of the current cubic epoch
	sent, acked, lost          int64   // packets
	recover                    int64   // losses of packets up to this one belong to the last cut
}

const (
	cubicC    = 0.4
	cubicBeta = 0.7
	cubicLen  = 1500 // IP bytes
)

func newCubic() *cubicFlow { return &cubicFlow{cwnd: 10, ssthresh: math.Inf(1)} }

func (c *cubicFlow) inflight() int64 { return c.sent - c.acked - c.lost }

func (c *cubicFlow) onACK(now, rtt int64) {
	c.acked++
	if c.cwnd < c.ssthresh {
		c.cwnd++
		return
	}
	t := float64(now-c.epoch)/1e6 + float64(rtt)/1e6
	k := math.Cbrt(c.wmax * (1 - cubicBeta) / cubicC)
	target := cubicC*math.Pow(t-k, 3) + c.wmax
	c.west += 3 * (1 - cubicBeta) / (1 + cubicBeta) / c.cwnd
	if target > c.cwnd {
		c.cwnd += (target - c.cwnd) / c.cwnd
	}
	c.cwnd = max(c.cwnd, c.west)
}

func (c *cubicFlow) onLoss(now, seq int64) {
	c.lost++
	if seq <= c.recover {
		return
	}
	c.recover = c.sent
	c.wmax = c.cwnd
	c.cwnd = max(c.cwnd*cubicBeta, 2)
	c.ssthresh, c.west, c.epoch = c.cwnd, c.cwnd, now
}

// dualEvent is a feedback event one RTT after a packet left (or was
// dropped by) the bottleneck.
type dualEvent struct {
	at, rtt int64 // µs
	seq     int64
	lost    bool
	fb      Feedback // Prague's cumulative counters as of this packet
}

// dualResult is what runDual measures after the warm-up.
type dualResult struct {
	pragueBps, cubicBps float64 // payload / IP bytes delivered per second
	meanPacket          float64 // Prague payload bytes per packet sent
	util                float64 // link busy share
	lP99                float64 // ms, L-queue sojourn p99
}

// runDual runs a Prague flow (and, with cubic, a CUBIC flow) through the
// aqm package's DualPI2 (the hop's) with configuration qc, on a link of
// mbit Mbit/s (IP bytes) and a 20 ms RTT that lies wholly after the
// bottleneck, for 40 s of virtual time, measuring from 10 s on. With
// block > 0 (µs) the receiver, half an RTT after the bottleneck, reports
// Prague's packets in blocks every block µs (type 18) instead of one ACK
// each, and the RTT samples leave the hold out, as the arrival offsets do.
func runDual(t *testing.T, qc aqm.Config, mbit float64, cubic bool, block int64) dualResult {
	t.Helper()
	const (
		rtt    = 20000 // µs, all of it after the bottleneck
		hdr    = 28    // IPv4 + UDP header on a Prague payload
		warmup = 10e6
		end    = 40e6
	)
	rate := mbit * 1e6 / 8
	q, err := aqm.NewDualPI2(qc, rand.New(rand.NewPCG(3, 4)))
	if err != nil {
		t.Fatal(err)
	}
	cc, err := New(Config{FeedbackHold: block}, 0)
	if err != nil {
		t.Fatal(err)
	}
	cub := newCubic()
	var (
		now, next, linkFree int64
		linkAt              float64 // µs: when the link is done with what it sent
		fb                  Feedback
		pEvents, cEvents    []dualEvent
		pBytes, pPkts       float64 // Prague payload sent after warmup
		pAcked, cAcked      float64 // delivered after warmup
		busy                float64 // µs
		sojourns            []int64 // µs, L queue
	)
	lost := func(m aqm.Meta) {
		if m.Slot == 0 {
			fb.Lost++ // reported with the next packet's ACK
		} else {
			cEvents = append(cEvents, dualEvent{at: now + rtt, seq: int64(m.Slot), lost: true})
		}
	}
	for now < end {
		// Advance, then dequeue, then enqueue at equal times (aqm.Queue).
		q.Advance(now * 1000)
		for now >= linkFree {
			m, v, ok := q.Dequeue(now * 1000)
			if !ok {
				break
			}
			if v.Action == aqm.Drop {
				lost(m)
				continue
			}
			// The link's clock runs in fractional µs (rounding each
			// transmission would speed the link up).
			tx := float64(m.Len) / rate * 1e6
			linkAt = max(linkAt, float64(now)) + tx
			done := int64(math.Ceil(linkAt))
			linkFree = done
			sent := m.Arrival / 1000
			if sent >= warmup {
				busy += tx
			}
			if m.Slot == 0 {
				fb.Received++
				if v.Action == aqm.Mark {
					fb.CE++
				}
				at, hold := done+rtt, int64(0)
				if block > 0 {
					arrived := done + rtt/2
					report := (arrived/block + 1) * block
					at, hold = report+rtt/2, report-arrived
				}
				pEvents = append(pEvents, dualEvent{at: at, rtt: at - sent - hold, fb: fb})
				if sent >= warmup {
					pAcked += float64(m.Len - hdr)
					sojourns = append(sojourns, now-sent)
				}
			} else {
				cEvents = append(cEvents, dualEvent{at: done + rtt, seq: int64(m.Slot), rtt: done + rtt - sent})
				if sent >= warmup {
					cAcked += float64(m.Len)
				}
			}
		}
		// One ACK step per ACK; with block feedback one per block (the
		// reports due now), after an RTT sample per packet it reports, as
		// the sender's onBlock and udp_prague do.
		var last Feedback
		due := 0
		for ; len(pEvents) > 0 && pEvents[0].at <= now; due++ {
			cc.RTT(pEvents[0].rtt)
			if block == 0 {
				cc.ACK(now, pEvents[0].fb)
			}
			last = pEvents[0].fb
			pEvents = pEvents[1:]
		}
		if block > 0 && due > 0 {
			cc.ACK(now, last)
		}
		for len(cEvents) > 0 && cEvents[0].at <= now {
			if e := cEvents[0]; e.lost {
				cub.onLoss(now, e.seq)
			} else {
				cub.onACK(now, e.rtt)
			}
			cEvents = cEvents[1:]
		}
		for cubic && float64(cub.inflight()) < cub.cwnd {
			cub.sent++
			if v := q.Enqueue(aqm.Meta{ECN: aqm.NotECT, Len: cubicLen, Slot: int32(cub.sent)}, now*1000); v.Action == aqm.Drop {
				lost(aqm.Meta{Slot: int32(cub.sent)})
			}
		}
		info := cc.Info(now)
		if cc.Inflight() < info.PacketWindow && now >= next {
			for i := 0; i < info.PacketBurst && cc.Inflight() < info.PacketWindow; i++ {
				cc.Sent(1)
				if now >= warmup {
					pBytes += float64(info.PacketSize)
					pPkts++
				}
				if v := q.Enqueue(aqm.Meta{ECN: info.ECN, Len: int32(info.PacketSize + hdr)}, now*1000); v.Action == aqm.Drop {
					fb.Lost++
				}
				next = max(next, now-BurstTime) + int64(float64(info.PacketSize)/info.PacingRate*1e6)
			}
		}
		// The next event: a PI update, the link, an ACK, a pacing time.
		wake := min(end, q.NextUpdate()/1000)
		if n, _ := q.Len(); n > 0 {
			wake = min(wake, max(linkFree, now))
		}
		if len(pEvents) > 0 {
			wake = min(wake, pEvents[0].at)
		}
		if len(cEvents) > 0 {
			wake = min(wake, cEvents[0].at)
		}
		if cc.Inflight() < cc.Info(now).PacketWindow {
			wake = min(wake, next)
		}
		now = max(wake, now+1)
	}
	secs := (end - warmup) / 1e6
	slices.Sort(sojourns)
	r := dualResult{pragueBps: pAcked / secs, cubicBps: cAcked / secs, meanPacket: pBytes / max(pPkts, 1), util: busy / (end - warmup)}
	if len(sojourns) > 0 {
		r.lP99 = float64(sojourns[len(sojourns)*99/100]) / 1000
	}
	return r
}

// Beside one cubic flow through kernel-default DualPI2 (the aqm package's)
// at 10 Mbit/s and 20 ms RTT, the Prague flow keeps the reference's packet
// sizes: its mean packet is within 10 % of the law, rate·vRTT/2 between
// 150 B and 1400 B, for the rate it gets, where a cap on serialisation
// time would shrink it far below. The lab's min_qlen_step 1 too.
func TestBesideCubicPacketLaw(t *testing.T) {
	for _, minQlen := range []uint32{0, 1} {
		qc := aqm.DefaultConfig()
		qc.MinQlenStep = minQlen
		r := runDual(t, qc, 10, true, 0)
		law := min(max(r.pragueBps*RefRTT/1e6/2, MinPacketSize), DefaultMTU)
		t.Logf("min_qlen_step %d: Prague %.2f Mbit/s (mean packet %.0f B, law %.0f B), cubic %.2f Mbit/s",
			minQlen, r.pragueBps*8/1e6, r.meanPacket, law, r.cubicBps*8/1e6)
		if r.pragueBps < 1e6/8 || r.cubicBps < 1e6/8 {
			t.Fatalf("Prague %.2f Mbit/s, cubic %.2f Mbit/s: want both flows to get through", r.pragueBps*8/1e6, r.cubicBps*8/1e6)
		}
		if math.Abs(r.meanPacket/law-1) > 0.10 {
			t.Errorf("min_qlen_step %d: mean packet %.0f B, the law gives %.0f B at %.2f Mbit/s; want within 10 %%", minQlen, r.meanPacket, law, r.pragueBps*8/1e6)
		}
	}
}

// Prague alone through the aqm package's DualPI2 at the lab's Prague rates
// and bounds (testbed's pragueBounds: 10 Mbit/s ≥ 97 %, L p99 ≤ 2.6 ms;
// 50 Mbit/s ≥ 98.5 %, p99 ≤ 1.8 ms; 1400 B payloads), with the kernel's
// defaults, under which udp_prague was measured through the hop. With the
// lab's min_qlen_step 1 the first packet queued behind one on the wire is
// not step-marked, so at 10 Mbit/s the queue runs one packet longer
// before the marks start: this model then gives p99 2.83 ms (logged, not
// held to the kernel-default bound).
func TestAloneThroughDualPI2(t *testing.T) {
	for _, tt := range []struct {
		mbit    float64
		minQlen uint32
		minUtil float64
		maxP99  float64 // ms; 0: not checked
	}{{10, 0, 0.97, 2.6}, {50, 0, 0.985, 1.8}, {10, 1, 0.97, 0}, {50, 1, 0.985, 1.8}} {
		qc := aqm.DefaultConfig()
		qc.MinQlenStep = tt.minQlen
		r := runDual(t, qc, tt.mbit, false, 0)
		t.Logf("%v Mbit/s, min_qlen_step %d: utilisation %.1f %%, L sojourn p99 %.2f ms, mean packet %.0f B",
			tt.mbit, tt.minQlen, r.util*100, r.lP99, r.meanPacket)
		if r.util < tt.minUtil || (tt.maxP99 > 0 && r.lP99 > tt.maxP99) || r.meanPacket != DefaultMTU {
			t.Errorf("%v Mbit/s, min_qlen_step %d: utilisation %.3f, p99 %.2f ms, mean packet %.0f B; want >= %.3f, <= %.1f ms, 1400 B",
				tt.mbit, tt.minQlen, r.util, r.lP99, r.meanPacket, tt.minUtil, tt.maxP99)
		}
	}
}

// Block feedback every 25 ms (udp_prague's --rfc8888 period) through
// kernel-default DualPI2 at 10 Mbit/s and 20 ms, one ACK step per block as
// the sender and udp_prague take them: a packet's report waits up to a
// period (12.5 ms on average) before it leaves, so the flow hears of a
// mark some 60 % later than with an ACK per packet (21.5 ms) and the L
// queue overshoots further before the cut (p99 4.1 against 2.5 ms); and
// the window, which must allow for the period (FeedbackHold), no longer
// brakes the flow between marks as the tight per-packet one does. Together
// some 7 % of the goodput: the ±5 % the live comparison allows does not
// hold for this law. (With udp_prague's window, no allowance, the same
// model gives 0.57.) The live comparison (TestFeedbackThroughHop in flow)
// comes out closer, because there the per-packet flow loses time to its
// window on the machine's stalls too.
func TestBlockFeedbackCost(t *testing.T) {
	qc := aqm.DefaultConfig()
	qc.MinQlenStep = 0
	ack, blk := runDual(t, qc, 10, false, 0), runDual(t, qc, 10, false, 25000)
	r := blk.pragueBps / ack.pragueBps
	t.Logf("per-packet ACKs %.2f Mbit/s (L p99 %.2f ms), blocks every 25 ms %.2f Mbit/s (L p99 %.2f ms): ratio %.3f",
		ack.pragueBps*8/1e6, ack.lP99, blk.pragueBps*8/1e6, blk.lP99, r)
	if r < 0.90 || r > 0.95 {
		t.Errorf("block feedback gets %.3f of the per-packet goodput; want 0.90..0.95 (a cost of 5-10 %%)", r)
	}
}
