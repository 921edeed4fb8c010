package flow

import (
	"context"
	"net"
	"net/netip"
	"time"

	"github.com/pi2hop/pi2hop/flow/ecnudp"
	"github.com/pi2hop/pi2hop/flow/prague"
	"github.com/pi2hop/pi2hop/flow/wire"
)

// PragueSend sends DATA packets to peer over conn under Prague congestion
// control until ctx is done or cfg.Duration has passed, and reads the
// receiver's feedback from the same socket: type-17 ACKs, or with
// cfg.RFC8888 type-18 block reports (a sender that hears the other kind
// says so and stops). In classic mode the packets are Not-ECT and only
// loss slows the flow.
//
// The loop runs on a thread of its own with 1 ns timer slack, at nice -20
// where permitted, and waits with ppoll, so packets leave close to their
// pacing time, at a modest CPU cost, instead of when the Go scheduler
// gets round to the goroutine.
func PragueSend(ctx context.Context, conn *net.UDPConn, peer netip.AddrPort, cfg PragueConfig, report func(Interval)) (SenderSummary, error) {
	cfg, classic, err := cfg.withDefaults()
	if err != nil {
		return SenderSummary{}, err
	}
	cc, err := prague.New(prague.Config{MTU: cfg.MTU, MaxRate: float64(cfg.MaxRate) / 8, Classic: classic,
		FeedbackHold: cfg.feedbackHold()}, 0)
	if err != nil {
		return SenderSummary{}, err
	}
	s, err := newSender(conn, peer, cc, "prague-send", cfg.Label, cfg.Interval, cfg.RFC8888, !cfg.NoECNValidation, report)
	if err != nil {
		return SenderSummary{}, err
	}
	return onPreciseThread(func() (SenderSummary, error) { return s.runBulk(ctx, cfg.Duration, cfg.MTU) })
}

// onPreciseThread runs f on a fresh locked thread with 1 ns timer slack,
// at nice -20 where permitted (ecnudp.Favour; the thread is dropped
// afterwards), and returns its results.
func onPreciseThread[T any](f func() (T, error)) (T, error) {
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	go func() {
		ecnudp.Precise()
		ecnudp.Favour()
		v, err := f()
		done <- result{v, err}
	}()
	r := <-done
	return r.v, r.err
}

// runBulk is the bulk sender's loop: send up to a burst while the window
// allows and the pacing time has come, then wait for ACKs until the next
// pacing time.
func (s *sender) runBulk(ctx context.Context, duration time.Duration, mtu int) (SenderSummary, error) {
	end := int64(1) << 62
	if duration > 0 {
		end = duration.Microseconds()
	}
	buf := make([]byte, mtu)
	var next float64 // µs: when the next burst may go
	for {
		now := s.now()
		if now >= end || ctx.Err() != nil {
			s.emit(now)
			return s.summary(now), nil
		}
		if err := s.tick(now); err != nil {
			return s.summary(now), err
		}
		info := s.cc.Info(now)
		windowOpen := s.cc.Inflight() < info.PacketWindow
		if windowOpen && float64(now) >= next {
			next = max(next, float64(now-maxLateness))
			for n := 0; n < info.PacketBurst && s.cc.Inflight() < info.PacketWindow; n++ {
				p := wire.AppendData(buf[:0], s.dataHeader(now))
				p = p[:info.PacketSize] // padding: buf beyond the header stays zero
				if err := s.write(now, p); err != nil {
					return s.summary(now), err
				}
				next += float64(info.PacketSize) / info.PacingRate * 1e6
			}
			continue
		}
		wait := min(s.nextReport, end) - now
		if windowOpen {
			wait = min(wait, int64(next)-now)
		} else {
			wait = min(wait, s.lastACK+prague.TimeoutAfter-now)
		}
		wait = min(max(wait, 0), 20000) // look at ctx every 20 ms
		readable, err := s.waiter.Wait(time.Duration(wait) * time.Microsecond)
		if err != nil {
			return s.summary(s.now()), err
		}
		if readable {
			if err := s.drain(); err != nil {
				return s.summary(s.now()), err
			}
		}
	}
}
