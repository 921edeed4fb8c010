package prague

import (
	"slices"
	"testing"
)

// stepSim is one Prague flow through a bottleneck of rate bytes/s with a
// FIFO that CE-marks a packet whose sojourn exceeds step µs (DualPI2's L
// queue alone: no coupled marks from an idle Classic queue), in virtual
// time. The path adds owd µs each way after the bottleneck; every packet
// is ACKed at once. It returns the p99 sojourn (µs) and utilisation over
// the run after warmup µs.
type stepSim struct {
	rate     float64 // bytes/s
	owd      int64   // µs each way
	step     int64   // µs
	duration int64   // µs
	warmup   int64   // µs
}

type simACK struct {
	at, sent int64
	fb       Feedback
}

func (s stepSim) run(cc *CC) (p99 int64, util float64) {
	var (
		now, next, linkFree int64
		fb                  Feedback
		acks                []simACK
		sojourns            []int64
		busy                float64 // µs the link spent sending after warmup
	)
	for now < s.duration {
		info := cc.Info(now)
		canSend := cc.Inflight() < info.PacketWindow
		if canSend && now >= next {
			for i := 0; i < info.PacketBurst && cc.Inflight() < info.PacketWindow; i++ {
				cc.Sent(1)
				start := max(now, linkFree)
				tx := float64(info.PacketSize) / s.rate * 1e6
				linkFree = start + int64(tx)
				if start-now > s.step {
					fb.CE++
				}
				fb.Received++
				if now >= s.warmup {
					sojourns = append(sojourns, start-now)
					busy += tx
				}
				acks = append(acks, simACK{at: linkFree + 2*s.owd, sent: now, fb: fb})
				next = max(next, now-BurstTime) + int64(float64(info.PacketSize)/info.PacingRate*1e6)
			}
			continue
		}
		wake := s.duration
		if canSend {
			wake = next
		}
		if len(acks) > 0 && acks[0].at < wake {
			wake = acks[0].at
		}
		now = max(now, wake)
		for len(acks) > 0 && acks[0].at <= now {
			cc.RTT(acks[0].at - acks[0].sent)
			cc.ACK(now, acks[0].fb)
			acks = acks[1:]
		}
	}
	slices.Sort(sojourns)
	return sojourns[len(sojourns)*99/100], busy / float64(s.duration-s.warmup)
}

// One flow under DualPI2's step marking alone (1 ms threshold, 20 ms base
// RTT) fills the link and keeps the L queue short. At 10 Mbit/s the queue
// peaks near threshold + one additive increase: the first marks come back
// a RTT after the queue crossed 1 ms, and meanwhile the window grew by
// about one MTU·(srtt/vRTT)², 0.8 ms of queue at that rate. The lab
// measures the same through the live hop (scenario prague).
func TestStepMarkingSingleFlow(t *testing.T) {
	for _, tt := range []struct {
		mbit    float64
		maxP99  int64 // µs
		minUtil float64
	}{
		{10, 2300, 0.92},
		{20, 2300, 0.92},
		{50, 2000, 0.94},
		{100, 2000, 0.94},
	} {
		cc, err := New(Config{}, 0)
		if err != nil {
			t.Fatal(err)
		}
		p99, util := stepSim{rate: tt.mbit * 1e6 / 8, owd: 10000, step: 1000, duration: 30e6, warmup: 5e6}.run(cc)
		t.Logf("%3.0f Mbit/s: L sojourn p99 %.2f ms, utilisation %.1f %%", tt.mbit, float64(p99)/1000, util*100)
		if p99 > tt.maxP99 || util < tt.minUtil {
			t.Errorf("%v Mbit/s: p99 %d µs, utilisation %.3f; want p99 <= %d µs and utilisation >= %.2f", tt.mbit, p99, util, tt.maxP99, tt.minUtil)
		}
	}
}
