// Package prague is the Prague congestion control for UDP, as pure code:
// no I/O and no clock. Every call takes the current time in microseconds,
// so the same code runs in real time in the endpoints and in virtual time
// in the tests.
//
// It follows the control law of L4STeam's udp_prague (PragueCC in
// prague_cc.cpp, read at commit 9a5c6d8) and RFC 9331 §4.3; deliberate
// differences are commented where they are:
//   - alpha is an EWMA (gain 1/16) of the CE fraction, updated once per
//     virtual RTT and only after a full window was acknowledged;
//   - on an ACK with new CE marks, at most one reduction per vRTT, by
//     W·alpha/2;
//   - on loss, a Reno-like halving, at most once per vRTT, undone when the
//     "lost" packet turns up late (reordering);
//   - additive increase per non-CE ACK, scaled so that every flow with an
//     RTT below 25 ms grows like a 25 ms Reno flow (vRTT = max(srtt, 25 ms));
//     after 7 + rate/(1.92 MB/s) vRTTs without a CE cut (or the Reno
//     regrowth time after a loss cut) the step grows to 1 ms of queue per
//     RTT ("new growth");
//   - packet size rate·vRTT/2 between 150 B and the MTU, bursts of at
//     most 250 µs, a packet window of W·1.03/size + 1 (derive);
//   - pacing at rate·1.03 for the first half of each vRTT after an alpha
//     update and rate/1.03 for the second half;
//   - ECT(1) until the receiver reports error_L4S or the sender's ECN
//     validation fails (Validator, RFC 9000 §13.4.2), then Not-ECT for
//     good with a loss-only response (FallBack).
//
// Rates are bytes per second, windows bytes, times microseconds.
package prague

import (
	"fmt"
	"math"

	"github.com/pi2hop/pi2hop/aqm"
)

// Constants of udp_prague (prague_cc.h), in this package's units.
const (
	InitWindow    = 10      // packets in the window before the first RTT sample
	DefaultMTU    = 1400    // bytes
	MinPacketSize = 150     // bytes: packets shrink to this at low rates
	MinRate       = 12500.0 // bytes/s (100 kbit/s); also the initial rate
	MaxRate       = 12.5e9  // bytes/s (100 Gbit/s)
	RefRTT        = 25000   // µs: the least vRTT (RTT independence)
	BurstTime     = 250     // µs of data sent back to back at most
	alphaGain     = 1.0 / 16
	minStep       = 7       // RTTs before new growth after a CE reduction
	rateStep      = 1.92e6  // bytes/s per extra RTT before new growth
	queueGrowth   = 1000    // µs: new growth adds this much queue per RTT
	minPktWindow  = 2       // packets
	rateOffset    = 1.03    // pacing above/below the rate in the two halves of a vRTT
	rateModeSRTT  = 2000    // µs: below this srtt the rate, not the window, is controlled
	TimeoutAfter  = 1000000 // µs without an ACK while window-limited: reset
)

// State is where the controller is in its cycle.
type State uint8

const (
	StateInit State = iota // no ACK yet
	StateCA                // congestion avoidance
	StateCWR               // reduced for CE in the last vRTT
	StateLoss              // halved for loss in the last vRTT
)

func (s State) String() string {
	if names := [...]string{"init", "ca", "cwr", "loss"}; int(s) < len(names) {
		return names[s]
	}
	return "unknown"
}

// Config sets up a controller. Zero values take the defaults named.
type Config struct {
	MTU     int     // largest packet, bytes; 0 = DefaultMTU
	MinRate float64 // bytes/s; 0 = MinRate
	MaxRate float64 // bytes/s; 0 = MaxRate
	// FPS > 0 selects frame (real-time) mode: the least vRTT becomes one
	// frame interval and alpha's gain is scaled so that it still averages
	// over about 25 ms of frames.
	FPS int
	// Classic makes the flow Not-ECT from the start and deaf to CE: the
	// same control law with a loss-only response (the C-queue A/B case).
	Classic bool
	// FeedbackHold is the longest the receiver holds a packet's feedback,
	// µs: 0 for per-packet ACKs, the report period for block feedback.
	FeedbackHold int64
}

// Feedback is the content of an ACK: the receiver's cumulative counters.
type Feedback struct {
	Received int32 // data packets received
	CE       int32 // of which CE-marked
	Lost     int32 // sequence gaps, less late arrivals
	ErrorL4S bool  // the receiver saw a codepoint other than ECT(1) or CE
}

// Info is what the sender needs to pace: read it after every event.
type Info struct {
	PacingRate   float64 // bytes/s to pace at now
	Rate         float64 // bytes/s, the controlled rate
	Window       float64 // bytes
	PacketSize   int     // bytes per packet now
	PacketBurst  int     // packets to send back to back
	PacketWindow int     // packets allowed in flight
	Alpha        float64 // CE-fraction EWMA, 0..1
	SRTT         int64   // µs, 0 before the first sample
	VRTT         int64   // µs
	ECN          aqm.ECN // codepoint to send: ECT(1), or Not-ECT after fallback / in classic mode
	State        State
}

// CC is one Prague controller. It is not safe for concurrent use.
type CC struct {
	mtu              float64
	minRate, maxRate float64
	frameInterval    int64 // µs, 0 outside frame mode
	gain             float64
	classic          bool
	hold             int64 // µs, Config.FeedbackHold

	state    State
	ecn      aqm.ECN
	rate     float64 // bytes/s
	window   float64 // bytes
	srtt     int64   // µs
	vrtt     int64   // µs
	rateMode bool

	alpha        float64
	alphaAt      int64 // µs of the last alpha update
	alphaSent    int32 // packets sent at the last alpha update
	alphaRecv    int32 // Received at the last alpha update
	alphaCE      int32 // CE at the last alpha update
	rttsToGrowth int64 // vRTTs left before new growth

	sent       int32 // packets sent so far (sequence numbers used)
	last       Feedback
	writtenOff int32 // packets sent by the last timeout: no longer counted in flight

	cutAt   int64 // µs of the last reduction (CE or loss)
	cutSent int32 // packets sent at the last reduction
	// Loss-cut undo (udp_prague keeps it until the next loss, also after
	// the loss state ended): what the last halving took, which mode it
	// took it in, the receiver's lost count before it, and the growth
	// delay it added.
	lostRate, lostWindow float64
	lostRateMode         bool
	lossLost             int32
	lostGrowth           int64

	pktSize   int
	pktBurst  int
	pktWindow int
}

// New returns a controller starting at MinRate with an initial window of
// InitWindow packets, at time now (µs).
func New(cfg Config, now int64) (*CC, error) {
	c := &CC{mtu: float64(cfg.MTU), minRate: cfg.MinRate, maxRate: cfg.MaxRate, classic: cfg.Classic, gain: alphaGain}
	if cfg.MTU == 0 {
		c.mtu = DefaultMTU
	}
	if c.mtu < MinPacketSize || c.mtu > 65507 {
		return nil, fmt.Errorf("prague: MTU %d not in %d..65507 bytes", cfg.MTU, MinPacketSize)
	}
	if c.minRate == 0 {
		c.minRate = MinRate
	}
	if c.maxRate == 0 {
		c.maxRate = MaxRate
	}
	if c.minRate < 0 || c.maxRate < c.minRate {
		return nil, fmt.Errorf("prague: rate range %.0f..%.0f B/s is empty", c.minRate, c.maxRate)
	}
	if cfg.FeedbackHold < 0 || cfg.FeedbackHold > TimeoutAfter/2 {
		return nil, fmt.Errorf("prague: feedback hold %d µs not in 0..%d", cfg.FeedbackHold, TimeoutAfter/2)
	}
	c.hold = cfg.FeedbackHold
	if cfg.FPS < 0 || cfg.FPS > 1000 {
		return nil, fmt.Errorf("prague: FPS %d not in 0..1000", cfg.FPS)
	}
	if cfg.FPS > 0 {
		c.frameInterval = 1000000 / int64(cfg.FPS)
		// Keep alpha's memory at about 16 updates of 25 ms.
		c.gain = math.Min(1, float64(c.frameInterval)/(16*RefRTT))
	}
	c.ecn = aqm.ECT1
	if c.classic {
		c.ecn = aqm.NotECT
	}
	c.reset(now)
	return c, nil
}

// reset puts the controller back to its initial rate, as after a timeout.
func (c *CC) reset(now int64) {
	c.state = StateInit
	c.rate = math.Max(MinRate, c.minRate)
	c.window = InitWindow * c.mtu
	c.alpha = 0
	c.alphaAt = now
	c.alphaSent = c.sent
	c.alphaRecv, c.alphaCE = c.last.Received, c.last.CE
	c.rttsToGrowth = growthDelay(c.rate)
	c.lostGrowth = 0
	c.rateMode = false
	c.vrtt = c.vrttOf(c.srtt)
	c.derive()
}

// Timeout resets the rate and window (udp_prague ResetCCInfo): call it
// when the sender is window-limited and no ACK came for TimeoutAfter µs.
// The packets in flight are written off: the receiver cannot report them
// lost until newer packets reach it, so without this a sender whose whole
// window was lost would wait forever.
func (c *CC) Timeout(now int64) {
	c.writtenOff = c.sent
	c.reset(now)
	// udp_prague restarts from one MTU-sized packet in a 2-packet window,
	// until the next ACK derives the sizes from the rate again.
	c.window = c.mtu
	c.pktSize, c.pktBurst, c.pktWindow = int(c.mtu), 1, minPktWindow
}

// Sent records that n more packets (sequence numbers) went out.
func (c *CC) Sent(n int) { c.sent += int32(n) }

// RTT records one round-trip sample in µs (now − echoed timestamp).
func (c *CC) RTT(rtt int64) {
	if rtt < 1 {
		rtt = 1 // same-µs loopback
	}
	if c.srtt == 0 {
		c.srtt = rtt
	} else {
		c.srtt += (rtt - c.srtt) >> 3 // as udp_prague: rounds down, also as the RTT falls
	}
	c.vrtt = c.vrttOf(c.srtt)
}

func (c *CC) vrttOf(srtt int64) int64 {
	least := int64(RefRTT)
	if c.frameInterval > 0 {
		least = c.frameInterval
	}
	return max(srtt, least)
}

// Inflight returns the packets sent and not yet reported received or
// lost, less those written off by a timeout. (The receiver accounts for
// packets in sequence order, so Received + Lost is about the highest
// sequence number it has seen.)
func (c *CC) Inflight() int {
	return int(max(0, c.sent-max(c.last.Received+c.last.Lost, c.writtenOff)))
}

// Info returns the pacing parameters at time now.
func (c *CC) Info(now int64) Info {
	pacing := c.rate / rateOffset
	if now-c.alphaAt < c.vrtt/2 {
		pacing = c.rate * rateOffset
	}
	return Info{
		PacingRate: pacing, Rate: c.rate, Window: c.window,
		PacketSize: c.pktSize, PacketBurst: c.pktBurst, PacketWindow: c.pktWindow,
		Alpha: c.alpha, SRTT: c.srtt, VRTT: c.vrtt, ECN: c.ecn, State: c.state,
	}
}
