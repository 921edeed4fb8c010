package flow

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/pi2hop/pi2hop/figure"
)

// Reporter writes an endpoint's interval reports and final summary as
// text lines or JSON lines. Its Interval method is the report callback the
// endpoints take.
type Reporter struct {
	w     io.Writer
	json  bool
	label string
}

// NewReporter writes to w, as JSON lines if asJSON; a non-empty label goes
// into every summary (the endpoints put it in their intervals).
func NewReporter(w io.Writer, asJSON bool, label string) *Reporter {
	return &Reporter{w: w, json: asJSON, label: label}
}

// Interval writes one interval report: the fields that apply to its flow.
func (o *Reporter) Interval(iv Interval) {
	if o.json {
		b, _ := json.Marshal(iv)
		o.w.Write(append(b, '\n'))
		return
	}
	var b strings.Builder
	fmt.Fprintf(&b, "[%s] %7.2f s", iv.Flow, iv.T)
	if iv.Label != "" {
		fmt.Fprintf(&b, " %s", iv.Label)
	}
	if iv.SentBps > 0 {
		fmt.Fprintf(&b, "  sent %7.3f Mbit/s", iv.SentBps/1e6)
	}
	if iv.Flow != "probe" {
		fmt.Fprintf(&b, "  goodput %7.3f Mbit/s", iv.GoodputBps/1e6)
	}
	if iv.RTTSamples > 0 {
		fmt.Fprintf(&b, "  RTT %.2f ms (p99 %.2f, max %.2f)", iv.RTTMeanMs, iv.RTTP99Ms, iv.RTTMaxMs)
	}
	if iv.Flow != "bulk" {
		fmt.Fprintf(&b, "  CE %.2f%%  loss %.2f%%", iv.CEFrac*100, iv.LossFrac*100)
	}
	if iv.PacingBps > 0 {
		fmt.Fprintf(&b, "  pacing %.3f Mbit/s  window %d pkts  alpha %.3f  %s", iv.PacingBps/1e6, iv.WindowPkts, iv.Alpha, iv.ECN)
	}
	if iv.TargetBps > 0 {
		fmt.Fprintf(&b, "  target %.3f Mbit/s  frames %d (key %d)", iv.TargetBps/1e6, iv.Frames, iv.Keyframes)
	}
	if iv.Flow == "video-recv" {
		fmt.Fprintf(&b, "  %.1f fps  late %d  undecodable %d  stalls %d (%.0f ms)  frame delay p50 %.1f ms",
			iv.FPS, iv.Late, iv.Undecodable, iv.Stalls, iv.StallMs, iv.FrameDelayP50)
	}
	if iv.PLIs > 0 {
		fmt.Fprintf(&b, "  PLI %d", iv.PLIs)
	}
	if iv.ErrorL4S {
		b.WriteString("  error_L4S")
	}
	if iv.ECNFallback != "" {
		fmt.Fprintf(&b, "  ECN validation failed: %s", iv.ECNFallback)
	}
	b.WriteByte('\n')
	io.WriteString(o.w, b.String())
}

// Summary writes the final figures of a flow of the kind given: key,
// value pairs, in order in text (floats to 4 significant digits), as one
// object in JSON.
func (o *Reporter) Summary(kind string, kv ...any) {
	if o.json {
		m := map[string]any{"flow": kind, "summary": true}
		if o.label != "" {
			m["label"] = o.label
		}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		b, _ := json.Marshal(m)
		o.w.Write(append(b, '\n'))
		return
	}
	var b strings.Builder
	fmt.Fprintf(&b, "[%s] summary:", kind)
	for i := 0; i+1 < len(kv); i += 2 {
		switch v := kv[i+1].(type) {
		case float64:
			fmt.Fprintf(&b, " %s=%.4g", kv[i], v)
		default:
			fmt.Fprintf(&b, " %s=%v", kv[i], v)
		}
	}
	b.WriteByte('\n')
	io.WriteString(o.w, b.String())
}

// SenderSummary writes a Prague sender's summary (kind prague-send or
// video-send), then the extra pairs.
func (o *Reporter) SenderSummary(kind string, s SenderSummary, extra ...any) {
	rtt := figure.Summarise(figure.Millis(s.RTT))
	kv := []any{"duration_s", s.Duration.Seconds(), "packets_sent", s.PacketsSent, "goodput_bps", s.GoodputBps,
		"rtt_samples", len(s.RTT), "rtt_p50_ms", rtt.P50, "rtt_p95_ms", rtt.P95, "rtt_p99_ms", rtt.P99, "rtt_max_ms", rtt.Max,
		"ce_frac", s.CEFraction, "loss_frac", s.LossFraction, "ecn", s.ECN, "fell_back", s.FellBack, "timeouts", s.Timeouts,
		"ecn_validation", s.Validation.State}
	v := s.Validation
	if v.Failed != "" {
		kv = append(kv, "ecn_fail_reason", v.Failed, "ecn_fail_t_s", v.At.Seconds())
	}
	kv = append(kv, "rtt_rise_no_ce_ms", figure.Ms(v.RTTRiseNoCE))
	if o.json && v.RTTRiseNoCE >= RTTRiseNote {
		kv = append(kv, "ecn_note", noSignal(v.RTTRiseNoCE))
	}
	o.Summary(kind, append(kv, extra...)...)
	if o.json {
		return
	}
	if v.Failed != "" {
		fmt.Fprintf(o.w, "[%s] ECN validation failed at %.2f s (%s): sending Not-ECT with a loss-only response\n", kind, v.At.Seconds(), v.Failed)
	}
	if v.RTTRiseNoCE >= RTTRiseNote {
		fmt.Fprintf(o.w, "[%s] %s\n", kind, noSignal(v.RTTRiseNoCE))
	}
}

// noSignal is the report's note on an RTT that rose with no CE: what the
// counts cannot tell (CE bleached, or a queue that does not mark L4S).
func noSignal(rise time.Duration) string {
	return fmt.Sprintf("no congestion signal while RTT rose by %.1f ms", figure.Ms(rise))
}

// VideoSenderSummary writes a video sender's summary.
func (o *Reporter) VideoSenderSummary(s VideoSenderSummary) {
	o.SenderSummary("video-send", s.SenderSummary, "frames", s.Frames, "keyframes", s.Keyframes, "plis", s.PLIs, "flushes", s.Flushes)
}

// ReceiverSummary writes a Prague receiver's summary.
func (o *Reporter) ReceiverSummary(s ReceiverSummary) {
	o.Summary("prague-recv", "duration_s", s.Duration.Seconds(), "packets", s.Packets, "goodput_bps", s.GoodputBps,
		"not_ect", s.NotECT, "ect1", s.ECT1, "ect0", s.ECT0, "ce", s.CE,
		"ce_frac", s.CEFraction, "lost", s.Lost, "loss_frac", s.LossFraction, "error_l4s", s.ErrorL4S)
}

// VideoSummary writes a video receiver's summary: the call's quality
// figures (docs/design.md, the video call).
func (o *Reporter) VideoSummary(s VideoReceiverSummary) {
	ge25, zero := figure.FPSShares(s.FPS, 25)
	delay := figure.Summarise(figure.Millis(s.FrameDelay))
	o.Summary("video-recv", "duration_s", s.Duration.Seconds(), "frames", s.Frames, "displayed", s.Displayed,
		"late", s.Late, "undecodable", s.Undecodable, "plis", s.PLIs,
		"share_fps_ge25", ge25, "share_fps_0", zero,
		"stalls", len(s.Stalls), "stall_rate", s.StallRate, "stalls_per_min", s.StallsPerMinute, "gaps_100ms", s.Gaps100ms,
		"frame_delay_p50_ms", delay.P50, "frame_delay_p99_ms", delay.P99, "loss_frac", s.LossFraction)
}

// BulkSummary writes a bulk client's summary.
func (o *Reporter) BulkSummary(s BulkSummary) {
	o.Summary("bulk", "bytes", s.Bytes, "duration_s", s.Duration.Seconds(), "goodput_bps", s.GoodputBps)
}

// ProbeSummary writes a probe client's summary.
func (o *Reporter) ProbeSummary(s ProbeSummary) {
	rtt := figure.Summarise(figure.Millis(s.RTT))
	o.Summary("probe", "ecn", s.ECN, "sent", s.Sent, "received", s.Received, "lost", s.Lost,
		"forward_ce", s.ForwardCE, "return_ce", s.ReturnCE,
		"rtt_p50_ms", rtt.P50, "rtt_p95_ms", rtt.P95, "rtt_p99_ms", rtt.P99, "rtt_max_ms", rtt.Max)
}
