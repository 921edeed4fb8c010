package flow

import "time"

// Codepoint choices for the ECN fields of configs and the --ecn flag.
const (
	ECNL4S     = "l4s"     // ECT(1) with the Prague response to CE and loss (L queue)
	ECNClassic = "classic" // Not-ECT with a loss-only response (C queue)
)

// PragueConfig configures PragueSend and PragueRecv.
type PragueConfig struct {
	ECN      string        // ECNL4S (default when empty) or ECNClassic
	MaxRate  uint64        // bit/s the sender never exceeds; 0 = no limit
	MTU      int           // largest UDP payload, bytes; 0 = 1400 (udp_prague's default)
	Duration time.Duration // how long to send; 0 = until ctx is done
	Interval time.Duration // report period; 0 = 1 s
	Label    string        // copied into every Interval and the summary
	// RFC8888 selects udp_prague's RFC 8888-style block feedback (type 18,
	// its --rfc8888) instead of an ACK per packet (type 17): the receiver
	// sends it, the sender expects it. Both ends must agree.
	RFC8888       bool
	RFC8888Period time.Duration // block report period; 0 = 25 ms (udp_prague's default)
	// NoECNValidation turns the sender's ECN validation off: it keeps
	// sending ECT(1) whatever the path does to it (a naive app).
	NoECNValidation bool
}

// VideoConfig configures VideoSend and VideoRecv (docs/design.md, the
// video call).
// Zero values take the defaults named on each field.
type VideoConfig struct {
	ECN             string        // ECNL4S (default) or ECNClassic
	FPS             int           // frames per second; 0 = 30
	MinRate         uint64        // bit/s, encoder floor; 0 = 300 kbit/s
	MaxRate         uint64        // bit/s, encoder ceiling; 0 = 8 Mbit/s
	KeyframeEvery   time.Duration // periodic keyframe; 0 = 2 s
	Playout         time.Duration // receiver playout delay D after the frame's capture; 0 = 80 ms
	FrameBudget     time.Duration // a frame's packets are paced over at most this; 0 = 15 ms
	Seed            uint64        // frame-size noise; the same seed gives the same frame sizes
	Duration        time.Duration // 0 = until ctx is done
	Interval        time.Duration // report period; 0 = 1 s
	Label           string
	RFC8888         bool          // block feedback, as PragueConfig.RFC8888
	RFC8888Period   time.Duration // 0 = 25 ms
	NoECNValidation bool          // as PragueConfig.NoECNValidation
}

// Interval is one periodic report, the row of the JSON lines the CLI prints
// with --json. Every flow fills the fields that apply to it; the others stay
// zero and are left out of the JSON.
type Interval struct {
	Flow  string  `json:"flow"`            // prague-send, prague-recv, video-send, video-recv, bulk, probe
	Label string  `json:"label,omitempty"` // from the config
	T     float64 `json:"t"`               // end of the interval, seconds since the flow started
	Dur   float64 `json:"dur"`             // length of the interval, seconds

	SentBps    float64 `json:"sent_bps,omitempty"`    // UDP payload sent
	GoodputBps float64 `json:"goodput_bps"`           // payload delivered (receiver) or acknowledged (sender)
	PacingBps  float64 `json:"pacing_bps,omitempty"`  // congestion-control rate at the end of the interval
	TargetBps  float64 `json:"target_bps,omitempty"`  // video encoder target
	Packets    int64   `json:"packets,omitempty"`     // sent (sender) or received (receiver) in the interval
	RTTSamples int     `json:"rtt_samples,omitempty"` // RTT samples in the interval
	RTTMeanMs  float64 `json:"rtt_ms,omitempty"`
	RTTP50Ms   float64 `json:"rtt_p50_ms,omitempty"`
	RTTP99Ms   float64 `json:"rtt_p99_ms,omitempty"`
	RTTMaxMs   float64 `json:"rtt_max_ms,omitempty"`
	SRTTMs     float64 `json:"srtt_ms,omitempty"`
	CEFrac     float64 `json:"ce_frac"`   // CE-marked / received, in the interval
	LossFrac   float64 `json:"loss_frac"` // lost / (received + lost), in the interval
	WindowPkts int     `json:"window_pkts,omitempty"`
	Alpha      float64 `json:"alpha,omitempty"`
	ECN        string  `json:"ecn,omitempty"` // codepoint sent (sender) at the end of the interval
	ErrorL4S   bool    `json:"err_l4s,omitempty"`
	// ECNFallback is the reason the sender's ECN validation failed, in
	// the interval it failed in (bleached, re-marked, mangled,
	// counts-decreased, ect-dropped, error-l4s).
	ECNFallback string `json:"ecn_fallback,omitempty"`

	FPS           float64 `json:"fps,omitempty"`         // frames displayed per second
	Frames        int     `json:"frames,omitempty"`      // frames sent (sender) or displayed (receiver)
	Keyframes     int     `json:"keyframes,omitempty"`   // keyframes sent or received
	Late          int     `json:"late,omitempty"`        // frames completed after the late deadline
	Undecodable   int     `json:"undecodable,omitempty"` // frames lost, incomplete or with a broken reference
	Stalls        int     `json:"stalls,omitempty"`      // freezes (W3C rule) that ended in the interval
	StallMs       float64 `json:"stall_ms,omitempty"`    // their total duration
	FrameDelayP50 float64 `json:"frame_delay_p50_ms,omitempty"`
	FrameDelayP99 float64 `json:"frame_delay_p99_ms,omitempty"`
	PLIs          int     `json:"plis,omitempty"` // picture-loss indications sent or received
}
