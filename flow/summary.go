package flow

import "time"

// SenderSummary is what a Prague sender saw over its whole run.
type SenderSummary struct {
	Label    string
	ECN      string        // codepoint sent at the end: "ECT(1)" or "Not-ECT"
	FellBack bool          // the sender went Not-ECT: its ECN validation failed
	Duration time.Duration // first packet sent to the end
	// Validation is what the sender's ECN validation found.
	Validation ECNValidation

	PacketsSent int64
	BytesSent   int64 // UDP payload
	AckedBytes  int64 // payload of acknowledged packets
	// The receiver's cumulative counters from the last ACK.
	Received, CE, Lost int64
	Timeouts           int // 1 s without ACKs while window-limited (rate reset)

	// RTT holds one sample per ACK (now − echoed timestamp, which excludes
	// the receiver's hold time); RTTAt[i] is when RTT[i] was taken, since
	// the flow started, so callers can drop a warm-up.
	RTT   []time.Duration
	RTTAt []time.Duration

	GoodputBps   float64 // AckedBytes over Duration, bit/s
	CEFraction   float64 // CE / Received
	LossFraction float64 // Lost / (Received + Lost)
	Intervals    []Interval
}

// ECNValidation is the outcome of a sender's ECN validation (RFC 9000
// §13.4.2, docs/design.md, ECN validation).
type ECNValidation struct {
	// State: "capable" (the path keeps ECN), "testing" or "unknown" (the
	// run ended before the test packets' fate was known), "failed",
	// "off" (--no-ecn-validation) or "classic" (a Not-ECT flow).
	State string
	// Failed is the reason validation failed: bleached, re-marked,
	// mangled, counts-decreased, ect-dropped or error-l4s; "" if it did
	// not. At is when, since the flow started.
	Failed string
	At     time.Duration
	// RTTRiseNoCE is the largest rise of an interval's median RTT over
	// the path's minimum in intervals that brought no CE while the flow
	// sent ECT(1): a queue that gives no L4S signal (a Classic bottleneck,
	// or CE bleached on the way, which the counts cannot show).
	RTTRiseNoCE time.Duration
}

// RTTRiseNote is the rise of RTT without CE from which a sender's report
// says "no congestion signal": five times DualPI2's 1 ms step threshold,
// past any queue an L4S AQM keeps unmarked.
const RTTRiseNote = 5 * time.Millisecond

// ReceiverSummary is what a Prague receiver saw.
type ReceiverSummary struct {
	Label    string
	Duration time.Duration // first to last data packet

	Packets int64 // data packets received (duplicates included)
	Bytes   int64 // UDP payload received
	// Per-codepoint counts of received data packets.
	NotECT, ECT1, ECT0, CE int64
	Lost                   int64 // sequence gaps, less the late packets that filled them
	ErrorL4S               bool  // a packet arrived neither ECT(1) nor CE (bleached or re-marked)

	GoodputBps   float64
	CEFraction   float64 // CE / (ECT(1) + CE)
	LossFraction float64 // Lost / (Packets + Lost)
	Intervals    []Interval
}

// VideoSenderSummary is what the video-call sender saw. The embedded
// SenderSummary holds the Prague part, including the per-ACK RTT samples
// that the lab compares with Apple's figures.
type VideoSenderSummary struct {
	SenderSummary
	Frames    int // frames encoded
	Keyframes int // of which keyframes (periodic and on PLI)
	PLIs      int // picture-loss indications received
	Flushes   int // sender queue held more than 100 ms and was flushed
	// TargetBps is the encoder target in each report interval.
	TargetBps []float64
}

// VideoReceiverSummary is what the video-call receiver saw.
type VideoReceiverSummary struct {
	Label    string
	Duration time.Duration // first packet to the end

	Packets      int64
	Bytes        int64
	CE           int64
	Lost         int64
	LossFraction float64 // Lost / (Packets + Lost)

	Frames      int // frames decided (displayed, late or undecodable)
	Displayed   int
	Late        int // completed after the late deadline (frame_ts + 400 ms): dropped
	Undecodable int // incomplete, or a reference was missing
	Keyframes   int // keyframes displayed
	PLIs        int // picture-loss indications sent

	// FPS[i] counts the frames displayed in second i of the session
	// (windows aligned to the first packet).
	FPS []int
	// Display[i] is when displayed frame i was shown and FrameDelay[i] its
	// display time minus its capture time (shared clock assumed: the lab's
	// namespaces share the host clock; across machines it needs NTP).
	Display    []time.Duration
	FrameDelay []time.Duration

	// Freezes by the W3C webrtc-stats rule: a gap between displayed frames
	// of at least max(3·avg, avg + 150 ms), avg the mean display interval
	// of the last 30 frames.
	Stalls          []Stall
	StallTime       time.Duration
	StallRate       float64 // StallTime / Duration
	StallsPerMinute float64
	Gaps100ms       int // gaps between displayed frames longer than 100 ms

	Intervals []Interval
}

// Stall is one freeze: the display gap starting At (since the session
// started) and lasting Duration.
type Stall struct {
	At       time.Duration
	Duration time.Duration
}

// BulkSummary is what BulkFetch received.
type BulkSummary struct {
	Label      string
	Bytes      int64
	Duration   time.Duration
	GoodputBps float64
	// PerSecond[i] is the goodput in second i, bit/s.
	PerSecond []float64
	Intervals []Interval
}

// ProbeSummary is what Probe measured.
type ProbeSummary struct {
	Label    string
	ECN      string // codepoint the probes were sent with
	Sent     int
	Received int
	Lost     int // no reply within 1 s or by the end
	// Replies whose request arrived CE-marked at the server (forward path),
	// and replies that arrived CE-marked back (return path).
	ForwardCE, ReturnCE int
	// Forward and Return count the replies by codepoint (aqm.ECN index):
	// the one their request arrived with at the server, and the one they
	// arrived back with.
	Forward, Return [4]int
	RTT             []time.Duration
	RTTAt           []time.Duration // since the probe started
	Intervals       []Interval
}
