// Package report holds what a lab run measured and writes it out:
// report.json (every figure, the full configuration, versions), report.md
// (the tables) and plots (PNG, SVG), plus the summary printed on the terminal.
//
// The model is plain data: the testbed fills it in, this package only
// renders it, so a report read back from JSON renders the same tables.
package report

import (
	"time"

	"github.com/pi2hop/pi2hop/figure"
	"github.com/pi2hop/pi2hop/testbed/metrics"
)

// Report is one `pi2hop lab` invocation: a scenario and its runs.
type Report struct {
	Scenario string    `json:"scenario"` // "l4s-demo", "coexist", "bdp"
	Title    string    `json:"title"`
	About    string    `json:"about,omitempty"` // what the scenario does and why
	Started  time.Time `json:"started"`
	ElapsedS float64   `json:"elapsed_s"`
	Quick    bool      `json:"quick"`
	// Config is the scenario exactly as run, every knob (defaults and
	// flag overrides alike), so the report alone can repeat the run.
	Config   any      `json:"config"`
	Versions Versions `json:"versions"`
	Runs     []Run    `json:"runs"`
	// BDP is the window-limited TCP table (bdp scenario only).
	BDP []BDPRow `json:"bdp,omitempty"`
	// Comparison sets the measured figures beside published ones
	// (l4s-demo: Apple's WWDC23 session).
	Comparison *Table  `json:"comparison,omitempty"`
	Checks     []Check `json:"checks,omitempty"`
	// Findings state what an A/B shows (lab app), beside the checks.
	Findings []Finding `json:"findings,omitempty"`
	Plots    []string  `json:"plots"` // file names inside the report folder
	Notes    []string  `json:"notes,omitempty"`
}

// Versions says what produced a report.
type Versions struct {
	Pi2hop string `json:"pi2hop"` // module version or VCS revision
	Go     string `json:"go"`
	Kernel string `json:"kernel"`
	OS     string `json:"os"`
}

// Run is one configuration of the bottleneck with its traffic, measured
// after the warm-up.
type Run struct {
	Name  string `json:"name"`  // short, file-name safe: "dualpi2-l4s"
	Title string `json:"title"` // "DualPI2, call on L4S"
	AQM   string `json:"aqm"`   // "dualpi2" or "fifo"
	// Buffer describes the bottleneck's queue limit in words
	// ("FIFO 100 packets", "DualPI2 limit 10000 packets").
	Buffer    string  `json:"buffer"`
	RateBps   float64 `json:"rate_bps"` // bottleneck rate, server→client
	BaseRTTMs float64 `json:"base_rtt_ms"`
	DurationS float64 `json:"duration_s"` // traffic time, warm-up included
	WarmupS   float64 `json:"warmup_s"`   // excluded from every figure
	// Setup is the run exactly as built: the queue discipline with every
	// knob, the flows, the seed.
	Setup any `json:"setup,omitempty"`

	// ECNFault is the ECN path fault on both directions (an --ecn-fault
	// spec), "" for none.
	ECNFault string `json:"ecn_fault,omitempty"`

	Call   *Call   `json:"call,omitempty"` // the video call, when there is one
	App    *App    `json:"app,omitempty"`  // the user's app (lab app)
	Flows  []Flow  `json:"flows"`
	Queues []Queue `json:"queues"` // the server→client direction's queues
	// Utilisation is bytes dequeued / (rate · measured time) on the
	// server→client link.
	Utilisation float64 `json:"utilisation"`
	// UtilisationOutsidePauses is the same over the stats intervals that
	// no time the machine may have paused a CPU touched (testbed's
	// machinePauses: the host took it, or the wake-up probe woke over 1
	// ms late), and PausedTimeShare the share of the measured time left
	// out of it, -1 where neither steal nor a probe was there to tell.
	// Each Queue's SojournOutsidePausesMs is over the same intervals.
	UtilisationOutsidePauses float64   `json:"utilisation_outside_pauses"`
	PausedTimeShare          float64   `json:"paused_time_share"`
	Fairness                 *Fairness `json:"fairness,omitempty"`
	// HopLatenessMs is how late the hop handled its link events on the
	// server→client direction: its timing error, which every delay above
	// includes. A large tail means the machine was too busy to measure.
	HopLatenessMs figure.Summary `json:"hop_lateness_ms"`
	// HopWorstMs is the largest of those latenesses in either direction,
	// measured (not a histogram bound), over the same time; ProbeWorstMs
	// is how late the machine's wake-up probe (a SCHED_FIFO thread pinned
	// to each CPU at the owners' priority that only sleeps 1 ms and
	// wakes, as cyclictest -S) woke at worst meanwhile, -1 without a
	// probe. Lateness up to the probe's was the machine's; beyond it,
	// the hop's.
	HopWorstMs    float64 `json:"hop_worst_lateness_ms"`
	ProbeWorstMs  float64 `json:"floor_worst_lateness_ms"`
	ProbeRealTime bool    `json:"floor_realtime"` // the probe ran SCHED_FIFO
	// StealMs is the CPU time the hypervisor took from this machine over
	// the same time (/proc/stat steal, all CPUs, 10 ms steps; 0 on bare
	// metal, -1 where unknown): a probe that woke late while the host took
	// the CPUs was the host's doing.
	StealMs float64 `json:"host_steal_ms"`
	Series  Series  `json:"series"`
	// RTTMs holds raw RTT samples (ms, after warm-up) per flow label for
	// the CDF plots; too bulky for report.json, whose Dists summarise them.
	RTTMs map[string][]float64 `json:"-"`
	// RTTDist holds RTT distributions kept as counts rather than samples
	// (lab app's passive RTT, from histograms), per flow label, for the
	// same plots.
	RTTDist map[string]figure.Dist `json:"-"`
	// SojournDist is each queue's sojourn distribution after warm-up
	// ("L", "C"), for the sojourn CDF and CCDF plots; report.json
	// summarises it in Queues.
	SojournDist map[string]figure.Dist `json:"-"`
	// With lab --repeat N (N > 1): every figure above is the median of the
	// N repetitions, Spread holds each one's median and min-max by its
	// path in this JSON, and the series and plots are those of repetition
	// MedianRun (1-based), the one closest to the medians (see Combine).
	Repeats   int              `json:"repeats,omitempty"`
	MedianRun int              `json:"median_run,omitempty"`
	Spread    map[string]Range `json:"spread,omitempty"`
	Error     string           `json:"error,omitempty"` // set when the run failed
}

// Call is the video call's experience (docs/design.md, the lab's figures).
type Call struct {
	Label string `json:"label"`
	ECN   string `json:"ecn"` // "l4s" (ECT(1)) or "classic" (Not-ECT)
	// RTTMs: per-ACK round-trip times of the call's packets.
	RTTMs figure.Summary `json:"rtt_ms"`
	// RTTOutsidePausesMs: the same less the round trips that overlapped
	// a time the machine may have paused a CPU (the host took it, or the
	// wake-up probe woke over 1 ms late) or drained the queue it left
	// (testbed's machinePauses); PausedShare is the share of RTTMs's
	// samples left out of it, -1 where neither steal nor a probe was
	// there to tell. On a VM pauses last ms: a few of them decide a p99
	// that says nothing about the queue.
	RTTOutsidePausesMs figure.Summary `json:"rtt_outside_pauses_ms"`
	PausedShare        float64        `json:"rtt_paused_share"`
	// Loss: (sent − received)/sent over the measured time; LossMax1s the
	// worst one-second window.
	Loss      float64        `json:"loss"`
	LossMax1s float64        `json:"loss_max_1s"`
	Stalls    metrics.Stalls `json:"stalls"`
	// FPS: displayed frames per one-second window.
	FPS          []int          `json:"fps"`
	FPSMean      float64        `json:"fps_mean"`
	FPSAtLeast25 float64        `json:"fps_share_at_least_25"`
	FPSZero      float64        `json:"fps_share_zero"`
	FrameDelayMs figure.Summary `json:"frame_delay_ms"`
	GoodputBps   float64        `json:"goodput_bps"`
	// The sender's ECN validation (RFC 9000 §13.4.2), as flow's summary
	// names it: its outcome, the reason and time (s since the call
	// started) when it failed, whether the call fell back to Not-ECT
	// with a loss-only response, and the largest rise of RTT in an
	// interval that brought no CE while the call sent ECT(1).
	ECNValidation string  `json:"ecn_validation"`
	ECNFailReason string  `json:"ecn_fail_reason,omitempty"`
	ECNFailS      float64 `json:"ecn_fail_t_s,omitempty"`
	FellBack      bool    `json:"fell_back"`
	RTTRiseNoCEMs float64 `json:"rtt_rise_no_ce_ms"`
}

// Flow is one traffic flow's figures.
type Flow struct {
	Label      string          `json:"label"` // "bulk-1", "prague", "call"
	Kind       string          `json:"kind"`  // "video", "prague", "tcp-cubic", ...
	ECN        string          `json:"ecn"`   // "l4s", "classic"
	GoodputBps float64         `json:"goodput_bps"`
	RTTMs      *figure.Summary `json:"rtt_ms,omitempty"`
	Loss       *float64        `json:"loss,omitempty"`
}

// Queue is one queue's delay (sojourn = dequeue − enqueue time, delay
// line excluded) and counters at the bottleneck.
type Queue struct {
	Name      string         `json:"name"` // "L", "C" (FIFO: "C")
	SojournMs figure.Summary `json:"sojourn_ms"`
	// SojournOutsidePausesMs: the packets forwarded in the intervals no
	// machine pause touched (Run.PausedTimeShare).
	SojournOutsidePausesMs figure.Summary `json:"sojourn_outside_pauses_ms"`
	Packets                uint64         `json:"packets"` // forwarded
	Marked                 uint64         `json:"marked"`
	Dropped                uint64         `json:"dropped"`
}

// Fairness compares an L4S flow with a classic one (coexist).
type Fairness struct {
	L4SLabel     string  `json:"l4s_label"`
	ClassicLabel string  `json:"classic_label"`
	Ratio        float64 `json:"rate_ratio"` // L4S rate / classic rate
	Jain         float64 `json:"jain"`
}

// Series are the time series behind the plots. Times are seconds since
// the run's traffic started.
type Series struct {
	// Per second of the whole run, warm-up included (window k covers
	// [k, k+1) s); only whole windows of the traffic time.
	FPS []int `json:"fps,omitempty"`
	// The hop's worst lateness and the wake-up probe's worst wake-up, ms.
	HopWorstMs   []float64 `json:"hop_worst_lateness_ms,omitempty"`
	ProbeWorstMs []float64 `json:"floor_worst_lateness_ms,omitempty"`
	// Goodput per flow label and second (bin k covers [k, k+1) s); only
	// whole seconds of the traffic time, so the last is not an idle tail.
	Throughput map[string][]float64 `json:"throughput_bps,omitempty"`
	// Queue delay per queue: the median sojourn of the packets forwarded
	// between two stats snapshots (about QueueBinS apart, 0 where none
	// was), at times QueueT.
	QueueBinS    float64              `json:"queue_bin_s,omitempty"`
	QueueT       []float64            `json:"queue_t_s,omitempty"`
	QueueDelayMs map[string][]float64 `json:"queue_delay_ms,omitempty"`
}

// BDPRow is one line of the window-limited TCP table.
type BDPRow struct {
	DistanceKm   int     `json:"distance_km"`
	RTTMs        float64 `json:"rtt_ms"`
	WindowBytes  uint64  `json:"window_bytes"`
	LinkBps      float64 `json:"link_bps"`
	PredictedBps float64 `json:"predicted_bps"` // min(window/RTT, link)
	MeasuredBps  float64 `json:"measured_bps"`
	RelErr       float64 `json:"rel_err"` // |measured − predicted| / predicted
	Run          string  `json:"run"`     // the Run it came from
}

// Check is one acceptance criterion evaluated on the figures.
type Check struct {
	Name   string `json:"name"`
	Pass   bool   `json:"pass"`
	Detail string `json:"detail"`
}

// Table is a rendered table: the same rows go to report.md and the terminal.
type Table struct {
	Title  string     `json:"title"`
	Header []string   `json:"header"`
	Rows   [][]string `json:"rows"`
	Notes  []string   `json:"notes,omitempty"`
}
