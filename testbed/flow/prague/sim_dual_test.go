package prague

import (
	"math"
	"math/rand/v2"
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

// Beside one cubic flow through kernel-default DualPI2 (the aqm package's)
// at 10 Mbit/s and 20 ms RTT, the Prague flow keeps the reference's packet
// sizes: its mean packet is within 10 % of the law, rate·vRTT/2 between
// 150 B and 1400 B, for the rate it gets. (pi2hop's old 0.5 ms
// serialisation cap made it ~180 B there.)
func TestBesideCubicPacketLaw(t *testing.T) {
	const (
		rate   = 10e6 / 8 // bytes/s, IP bytes on the link
		rtt    = 20000    // µs, all of it after the bottleneck
		hdr    = 28       // IPv4 + UDP header on a Prague payload
		warmup = 10e6
		end    = 40e6
	)
	q, err := aqm.NewDualPI2(aqm.DefaultConfig(), rand.New(rand.NewPCG(3, 4)))
	if err != nil {
		t.Fatal(err)
	}
	cc, err := New(Config{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	cub := newCubic()
	var (
		now, next, linkFree int64
		fb                  Feedback
		pEvents, cEvents    []dualEvent
		pBytes, pPkts       float64 // Prague payload sent after warmup
		pAcked              float64 // Prague payload delivered after warmup
		cAcked              float64
	)
	enqueue := func(m aqm.Meta) {
		if v := q.Enqueue(m, now*1000); v.Action == aqm.Drop {
			if m.Slot == 0 {
				fb.Lost++
			} else {
				cEvents = append(cEvents, dualEvent{at: now + rtt, seq: int64(m.Slot), lost: true})
			}
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
				if m.Slot == 0 {
					fb.Lost++
				} else {
					cEvents = append(cEvents, dualEvent{at: now + rtt, seq: int64(m.Slot), lost: true})
				}
				continue
			}
			done := now + int64(float64(m.Len)/rate*1e6)
			linkFree = done
			if m.Slot == 0 {
				fb.Received++
				if v.Action == aqm.Mark {
					fb.CE++
				}
				sent := m.Arrival / 1000
				pEvents = append(pEvents, dualEvent{at: done + rtt, rtt: done + rtt - sent, fb: fb})
				if sent >= warmup {
					pAcked += float64(m.Len - hdr)
				}
			} else {
				cEvents = append(cEvents, dualEvent{at: done + rtt, seq: int64(m.Slot), rtt: done + rtt - m.Arrival/1000})
				if m.Arrival/1000 >= warmup {
					cAcked += float64(m.Len)
				}
			}
		}
		for len(pEvents) > 0 && pEvents[0].at <= now {
			cc.RTT(pEvents[0].rtt)
			cc.ACK(now, pEvents[0].fb)
			pEvents = pEvents[1:]
		}
		for len(cEvents) > 0 && cEvents[0].at <= now {
			if e := cEvents[0]; e.lost {
				cub.onLoss(now, e.seq)
			} else {
				cub.onACK(now, e.rtt)
			}
			cEvents = cEvents[1:]
		}
		for float64(cub.inflight()) < cub.cwnd {
			cub.sent++
			enqueue(aqm.Meta{ECN: aqm.NotECT, Len: cubicLen, Slot: int32(cub.sent)})
		}
		info := cc.Info(now)
		if cc.Inflight() < info.PacketWindow && now >= next {
			for i := 0; i < info.PacketBurst && cc.Inflight() < info.PacketWindow; i++ {
				cc.Sent(1)
				if now >= warmup {
					pBytes += float64(info.PacketSize)
					pPkts++
				}
				enqueue(aqm.Meta{ECN: info.ECN, Len: int32(info.PacketSize + hdr)})
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
		if wake <= now {
			wake = now + 1
		}
		now = wake
	}
	secs := (end - warmup) / 1e6
	pRate := pAcked / secs
	law := min(max(pRate*RefRTT/1e6/2, MinPacketSize), DefaultMTU)
	mean := pBytes / pPkts
	t.Logf("Prague %.2f Mbit/s (mean packet %.0f B, law %.0f B), cubic %.2f Mbit/s, p' %.4f",
		pRate*8/1e6, mean, law, cAcked/secs*8/1e6, aqm.ProbFloat(q.Prob()))
	if pRate < 1e6/8 || cAcked < 1e6/8*secs {
		t.Fatalf("Prague %.2f Mbit/s, cubic %.2f Mbit/s: want both flows to get through", pRate*8/1e6, cAcked/secs*8/1e6)
	}
	if math.Abs(mean/law-1) > 0.10 {
		t.Errorf("mean packet %.0f B, the law gives %.0f B at %.2f Mbit/s; want within 10 %%", mean, law, pRate*8/1e6)
	}
}
