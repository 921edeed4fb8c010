package flow

import (
	"context"
	"math"
	"math/rand/v2"
	"net"
	"net/netip"
	"time"

	"github.com/pi2hop/pi2hop/flow/prague"
	"github.com/pi2hop/pi2hop/flow/wire"
)

// Video-call emulator constants (docs/design.md, the video call).
const (
	videoHeader     = wire.RTDataSize + wire.VideoSize
	frameSizeSigma  = 0.2                    // lognormal σ of P-frame sizes
	keyframeFactor  = 4                      // keyframe size / mean frame size
	targetShare     = 0.9                    // encoder target = Prague rate × this
	maxQueueDelay   = 100 * time.Millisecond // older queued frames are flushed (SCReAM's rule)
	queueDrain      = 500 * time.Millisecond // the encoder leaves room to drain its send queue in this
	minVideoPayload = 100                    // bytes of frame data per packet, at least
	minFrameShare   = 0.25                   // a P-frame is at least this share of the mean, even in debt
)

// VideoSend runs the sending side of a video call to peer: a frame every
// 1/FPS, sized from the Prague rate (×0.9, less what the send queue needs
// to drain in 0.5 s, clamped to [MinRate, MaxRate]) with lognormal noise
// and the bytes of past keyframes paid back by the next P-frames, a keyframe at 4× the mean every KeyframeEvery and
// on the receiver's PLI, packets of at most 1200 bytes paced to fit the
// frame into FrameBudget (never slower than the Prague pacing rate), and
// the Prague window as a cap on packets in flight: it is what keeps a
// keyframe from flooding the bottleneck. Frames queued for more than
// 100 ms are flushed and a keyframe follows.
func VideoSend(ctx context.Context, conn *net.UDPConn, peer netip.AddrPort, cfg VideoConfig, report func(Interval)) (VideoSenderSummary, error) {
	cfg, classic, err := cfg.withDefaults()
	if err != nil {
		return VideoSenderSummary{}, err
	}
	cc, err := prague.New(prague.Config{
		MTU: videoMTU, FPS: cfg.FPS, Classic: classic,
		// No use growing beyond what the encoder can fill.
		MaxRate:      float64(cfg.MaxRate) / 8 / targetShare,
		FeedbackHold: feedbackHold(cfg.RFC8888, cfg.RFC8888Period),
	}, 0)
	if err != nil {
		return VideoSenderSummary{}, err
	}
	s, err := newSender(conn, peer, cc, "video-send", cfg.Label, cfg.Interval, cfg.RFC8888, !cfg.NoECNValidation, report)
	if err != nil {
		return VideoSenderSummary{}, err
	}
	v := &videoSender{sender: s, cfg: cfg, rng: rand.New(rand.NewPCG(cfg.Seed, 0x5eed)),
		period: int64(time.Second/time.Microsecond) / int64(cfg.FPS), wallStart: time.Now().UnixMicro(),
		keyEvery: keyframeInterval(cfg), repayFrames: max(1, cfg.FPS/2)}
	s.onPLI = v.pli
	s.extra = v.intervalFields
	return onPreciseThread(func() (VideoSenderSummary, error) { return v.run(ctx) })
}

// videoPacket is one queued packet of a frame.
type videoPacket struct {
	frameNr   int32
	captured  int64 // µs, sender clock
	frameTS   int64 // µs, Unix time (the receiver's reference)
	key       bool
	idx       uint16
	count     uint16
	offset    int32 // frame bytes before this packet
	frameSize int32
	data      int     // frame bytes in this packet
	pace      float64 // bytes/s that sends the frame within the budget
}

type videoSender struct {
	*sender
	cfg       VideoConfig
	rng       *rand.Rand
	period    int64 // µs
	wallStart int64 // Unix µs at the sender clock's zero

	queue     []videoPacket
	frameNr   int32
	keyEvery  int32 // frames from one periodic keyframe to the next
	keyNr     int32 // number of the last keyframe
	keyDoneAt int64 // µs: when its last packet was sent
	forceKey  bool
	target    float64 // bit/s
	// debt is the bytes produced above the target so far (never below 0),
	// repaid over repayFrames P-frames.
	debt        float64
	repayFrames int

	frames, keyframes, plis, flushes int
	ivFrames, ivKeys, ivPLIs         int
	targets                          []float64
}

func (v *videoSender) run(ctx context.Context) (VideoSenderSummary, error) {
	end := int64(1) << 62
	if v.cfg.Duration > 0 {
		end = v.cfg.Duration.Microseconds()
	}
	buf := make([]byte, videoMTU)
	var nextFrame int64
	var next float64 // µs: pacing time of the next packet
	for {
		now := v.now()
		if now >= end || ctx.Err() != nil {
			v.emit(now)
			return v.summary(now), nil
		}
		if err := v.tick(now); err != nil {
			return v.summary(now), err
		}
		if now >= nextFrame {
			v.encode(now)
			nextFrame += v.period
			if nextFrame <= now { // overslept a whole frame: keep the cadence from here
				nextFrame = now + v.period
			}
		}
		v.flushStale(now)
		info := v.cc.Info(now)
		windowOpen := v.cc.Inflight() < info.PacketWindow
		if len(v.queue) > 0 && windowOpen && float64(now) >= next {
			next = max(next, float64(now-maxLateness))
			for n := 0; n < info.PacketBurst && len(v.queue) > 0 && v.cc.Inflight() < info.PacketWindow; n++ {
				p := v.queue[0]
				v.queue = v.queue[1:]
				pkt := v.packet(buf, now, p)
				if err := v.write(now, pkt); err != nil {
					return v.summary(now), err
				}
				if p.frameNr == v.keyNr && int(p.idx)+1 == int(p.count) {
					v.keyDoneAt = now
				}
				next += float64(len(pkt)) / max(info.PacingRate, p.pace) * 1e6
			}
			continue
		}
		wait := min(nextFrame, v.nextReport, end) - now
		switch {
		case len(v.queue) > 0 && windowOpen:
			wait = min(wait, int64(next)-now)
		case !windowOpen:
			wait = min(wait, v.lastACK+prague.TimeoutAfter-now)
		}
		readable, err := v.waiter.Wait(time.Duration(min(max(wait, 0), 20000)) * time.Microsecond)
		if err != nil {
			return v.summary(v.now()), err
		}
		if readable {
			if err := v.drain(); err != nil {
				return v.summary(v.now()), err
			}
		}
	}
}

// keyframeInterval converts KeyframeEvery to whole frames (at least 1).
func keyframeInterval(cfg VideoConfig) int32 {
	return int32(max(1, math.Round(cfg.KeyframeEvery.Seconds()*float64(cfg.FPS))))
}

// encode produces the frame captured at now and queues its packets.
func (v *videoSender) encode(now int64) {
	info := v.cc.Info(now)
	// What still waits in the send queue lowers the target so that it
	// drains in about queueDrain (as SCReAM and WebRTC do with their RTP
	// and pacer queues): otherwise a target the path cannot carry just
	// fills the queue until a flush.
	queued := 0
	for _, p := range v.queue {
		queued += p.data + videoHeader
	}
	rate := info.Rate*targetShare - float64(queued)/queueDrain.Seconds()
	v.target = min(max(rate*8, float64(v.cfg.MinRate)), float64(v.cfg.MaxRate))
	mean := v.target / 8 * float64(v.period) / 1e6 // bytes
	key := v.frameNr == 0 || v.forceKey || v.frameNr+1-v.keyNr >= v.keyEvery
	// Rate control like an encoder's VBV buffer: bytes above the target
	// (a keyframe's 3 extra means) are paid back by the next P-frames over
	// about half a second, so the average stays at the target and the send
	// queue does not grow after every keyframe.
	size := mean * math.Exp(frameSizeSigma*v.rng.NormFloat64()-frameSizeSigma*frameSizeSigma/2)
	size = max(size-v.debt/float64(v.repayFrames), mean*minFrameShare)
	if key {
		size = keyframeFactor * mean
		v.forceKey = false
		v.keyNr = v.frameNr + 1
		v.keyframes++
		v.ivKeys++
	}
	v.frameNr++
	v.frames++
	v.ivFrames++
	v.debt = max(v.debt+size-mean, 0)
	frameBytes := max(int(size), 1)
	per := max(min(videoMTU, info.PacketSize)-videoHeader, minVideoPayload)
	count := (frameBytes + per - 1) / per
	if count > math.MaxUint16 {
		count, per = math.MaxUint16, (frameBytes+math.MaxUint16-1)/math.MaxUint16
	}
	pace := float64(frameBytes+count*videoHeader) / v.cfg.FrameBudget.Seconds()
	for i, off := 0, 0; i < count; i++ {
		n := min(per, frameBytes-off)
		v.queue = append(v.queue, videoPacket{
			frameNr: v.frameNr, captured: now, frameTS: v.wallStart + now, key: key,
			idx: uint16(i), count: uint16(count), offset: int32(off), frameSize: int32(frameBytes),
			data: n, pace: pace,
		})
		off += n
	}
}

// flushStale drops the queue when its oldest frame waited more than
// 100 ms, and asks for a keyframe: the dropped frames break the chain.
// A keyframe at 4× the mean may take longer than that to send at a tight
// rate, and flushing it or the frames right behind it would only ask for
// another: the newest keyframe is never flushed, and a frame waiting
// behind it starts its 100 ms when the keyframe is out.
func (v *videoSender) flushStale(now int64) {
	if len(v.queue) == 0 {
		return
	}
	head := v.queue[0]
	if head.frameNr == v.keyNr || now-max(head.captured, v.keyDoneAt) <= maxQueueDelay.Microseconds() {
		return
	}
	v.queue = v.queue[:0]
	v.flushes++
	v.forceKey = true
	v.debt = 0 // what was owed is gone with the flushed frames
}

// packet builds p's datagram in buf.
func (v *videoSender) packet(buf []byte, now int64, p videoPacket) []byte {
	d := v.dataHeader(now)
	d.RT, d.FrameNr, d.FrameSent, d.FrameSize = true, p.frameNr, p.offset, p.frameSize
	b := wire.AppendData(buf[:0], d)
	b = wire.AppendVideo(b, wire.Video{FrameTS: p.frameTS, Key: p.key, Count: p.count, Idx: p.idx})
	n := len(b) + p.data
	clear(buf[len(b):n])
	return buf[:n]
}

// pli handles a picture-loss indication: a keyframe, unless one newer
// than anything the receiver has seen is already on its way.
func (v *videoSender) pli(now int64, m wire.PLI) {
	v.plis++
	v.ivPLIs++
	if v.keyNr > m.FrameNr {
		return
	}
	v.forceKey = true
}

func (v *videoSender) intervalFields(iv *Interval) {
	iv.TargetBps, iv.Frames, iv.Keyframes, iv.PLIs = v.target, v.ivFrames, v.ivKeys, v.ivPLIs
	v.targets = append(v.targets, v.target)
	v.ivFrames, v.ivKeys, v.ivPLIs = 0, 0, 0
}

func (v *videoSender) summary(now int64) VideoSenderSummary {
	return VideoSenderSummary{
		SenderSummary: v.sender.summary(now),
		Frames:        v.frames, Keyframes: v.keyframes, PLIs: v.plis, Flushes: v.flushes,
		TargetBps: v.targets,
	}
}
