package flow

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"time"

	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/figure"
	"github.com/pi2hop/pi2hop/flow/wire"
)

// pliAfter is how long the receiver goes without a decodable frame before
// it asks for a keyframe, and how often it asks again.
const pliAfter = 100_000 // µs

// VideoRecv runs the receiving side of a video call: it ACKs every packet
// (or sends block feedback) like PragueRecv, rebuilds frames, decides which are displayed (complete,
// decodable, by capture + 400 ms) and when (capture + Playout at the
// earliest), sends a PLI once the decoding chain has been broken for
// 100 ms without a decodable frame, and measures displayed fps per second,
// freezes (W3C rule), frame delay and loss. It serves the first sender it
// hears from; the session runs from its first to its last packet. Frame
// metrics need pi2hop's video extension: a plain udp_prague RT sender is
// ACKed and counted, but its frames are not rebuilt.
func VideoRecv(ctx context.Context, conn *net.UDPConn, cfg VideoConfig, report func(Interval)) (VideoReceiverSummary, error) {
	cfg, classic, err := cfg.withDefaults()
	if err != nil {
		return VideoReceiverSummary{}, err
	}
	if err := setFeedbackECN(conn, classic); err != nil {
		return VideoReceiverSummary{}, err
	}
	period := int64(time.Second/time.Microsecond) / int64(cfg.FPS)
	r := &videoReceiver{conn: conn, clock: wire.NewClock(), wallStart: time.Now().UnixMicro(),
		label: cfg.Label, report: report, iv: newRecvInterval(cfg.Interval),
		freeze: freezeDetector{nominal: period}}
	r.frames = newFrameTracker(period, cfg.Playout.Microseconds(), r.decided)
	r.acks = newAcker(conn, "video-recv", cfg.RFC8888, cfg.RFC8888Period, videoMTU, classic)
	err = recvLoop(ctx, conn, r.clock, cfg.Duration, r.packet, r.tick, r.acks.fb.wake)
	return r.summary(), err
}

type videoReceiver struct {
	conn      *net.UDPConn
	clock     wire.Clock
	wallStart int64 // Unix µs at the clock's zero
	label     string
	report    func(Interval)

	st          ackState
	acks        acker
	frames      *frameTracker
	freeze      freezeDetector
	first, last int64 // Unix µs of the first and last packet
	lastPLI     int64
	decideAt    int64 // Unix µs of the decision being made
	broken      bool  // the last frame decided was not displayed
	brokenAt    int64 // Unix µs when the chain broke
	out         []byte

	displayed, late, undecodable, keyframes, plis int
	displays, delays                              []int64 // Unix µs, µs

	iv                                          recvInterval
	ivDisplayed, ivLate, ivUndec, ivKeys, ivPLI int
	ivStalls                                    int
	ivStallTime                                 int64
	ivDelays                                    []time.Duration
	intervals                                   []Interval
}

func (r *videoReceiver) packet(now, at int64, p []byte, from netip.AddrPort, e aqm.ECN) error {
	d, err := wire.DecodeData(p)
	if err != nil {
		return nil
	}
	wall := r.wallStart + now
	if !r.st.started {
		r.st.peer = from
		r.first = wall
		r.freeze.start = wall
	} else if from != r.st.peer {
		return nil // one call at a time
	}
	r.last = wall
	ack := r.st.data(now, at, d, e, len(p))
	if err := r.acks.send(now, at, from, d.Seq, e, ack); err != nil {
		return err
	}
	r.iv.add(len(p))
	if v, ok := wire.DecodeVideo(p); ok && d.RT {
		r.frames.packet(wall, d, v)
		r.decideAt = wall
		r.frames.decide(wall)
	}
	return nil
}

// decided receives each frame's fate from the tracker.
func (r *videoReceiver) decided(nr int32, fate frameFate, key bool, at, captured int64) {
	if fate == fateDisplayed {
		r.broken = false
	} else if !r.broken {
		r.broken, r.brokenAt = true, r.decideAt
	}
	switch fate {
	case fateDisplayed:
		r.displayed++
		r.ivDisplayed++
		if key {
			r.keyframes++
			r.ivKeys++
		}
		r.displays = append(r.displays, at)
		r.delays = append(r.delays, at-captured)
		r.ivDelays = append(r.ivDelays, time.Duration(at-captured)*time.Microsecond)
		if s, ok := r.freeze.display(at); ok {
			r.ivStalls++
			r.ivStallTime += s.Duration.Microseconds()
		}
	case fateLate:
		r.late++
		r.ivLate++
	default:
		r.undecodable++
		r.ivUndec++
	}
}

func (r *videoReceiver) tick(now int64, final bool) error {
	if err := r.acks.fb.tick(now, final); err != nil {
		return err
	}
	wall := r.wallStart + now
	if r.st.started {
		// Deadlines run on packet arrivals: when the sender stops (or the
		// path goes dark) the frames in flight are settled by what comes
		// next, not declared late because the clock moved on.
		r.decideAt = min(wall, r.last)
		r.frames.decide(r.decideAt)
		if err := r.maybePLI(wall); err != nil {
			return err
		}
	}
	if !r.iv.due(now, final) {
		return nil
	}
	iv := r.iv.close("video-recv", r.label, now, &r.st)
	iv.FPS, iv.Frames, iv.Keyframes = float64(r.ivDisplayed)/max(iv.Dur, 1e-9), r.ivDisplayed, r.ivKeys
	iv.Late, iv.Undecodable, iv.Stalls, iv.StallMs = r.ivLate, r.ivUndec, r.ivStalls, float64(r.ivStallTime)/1e3
	iv.PLIs = r.ivPLI
	if len(r.ivDelays) > 0 {
		slices.Sort(r.ivDelays)
		iv.FrameDelayP50, iv.FrameDelayP99 = figure.Ms(figure.Quantile(r.ivDelays, 0.5)), figure.Ms(figure.Quantile(r.ivDelays, 0.99))
	}
	r.intervals = append(r.intervals, iv)
	if r.report != nil {
		r.report(iv)
	}
	r.ivDisplayed, r.ivLate, r.ivUndec, r.ivKeys, r.ivPLI, r.ivStalls, r.ivStallTime = 0, 0, 0, 0, 0, 0, 0
	r.ivDelays = r.ivDelays[:0]
	return nil
}

// maybePLI asks for a keyframe once the decoding chain has been broken
// (a frame lost, late or undecodable) for pliAfter without a decodable
// frame, and again every pliAfter, while packets still come (a finished
// call needs none). A keyframe that is merely slow to arrive breaks
// nothing, so it does not draw another.
func (r *videoReceiver) maybePLI(wall int64) error {
	if !r.broken || wall-max(r.brokenAt, r.lastPLI) < pliAfter || wall-r.last > pliAfter {
		return nil
	}
	r.lastPLI = wall
	r.plis++
	r.ivPLI++
	r.out = wire.AppendPLI(r.out[:0], wire.PLI{FrameNr: r.frames.maxFrame})
	if _, err := r.conn.WriteToUDPAddrPort(r.out, r.st.peer); err != nil && !isTransient(err) {
		return fmt.Errorf("video-recv: PLI to %v: %w", r.st.peer, err)
	}
	return nil
}

func (r *videoReceiver) summary() VideoReceiverSummary {
	s := VideoReceiverSummary{
		Label: r.label, Packets: int64(r.st.received), Bytes: r.st.bytes, CE: int64(r.st.ce), Lost: int64(r.st.lost),
		Frames: r.displayed + r.late + r.undecodable, Displayed: r.displayed, Late: r.late, Undecodable: r.undecodable,
		Keyframes: r.keyframes, PLIs: r.plis, Intervals: r.intervals,
	}
	s.LossFraction = frac(s.Lost, s.Packets+s.Lost)
	if !r.st.started {
		return s
	}
	s.Duration = time.Duration(r.last-r.first) * time.Microsecond
	r.freeze.finish(r.last)
	s.Stalls, s.StallTime, s.Gaps100ms = r.freeze.stalls, r.freeze.total, r.freeze.gaps100ms
	if s.Duration > 0 {
		s.StallRate = float64(s.StallTime) / float64(s.Duration)
		s.StallsPerMinute = float64(len(s.Stalls)) / s.Duration.Minutes()
	}
	s.FPS = fpsWindows(r.displays, r.first, r.last)
	for i, at := range r.displays {
		s.Display = append(s.Display, time.Duration(at-r.first)*time.Microsecond)
		s.FrameDelay = append(s.FrameDelay, time.Duration(r.delays[i])*time.Microsecond)
	}
	return s
}
