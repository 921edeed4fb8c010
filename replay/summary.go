package replay

import (
	"fmt"
	"time"

	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/internal/jsonline"
	"github.com/pi2hop/pi2hop/shaper"
)

// WriteSummary returns the last line of a replay: per-queue counts, the
// queue's own statistics, link utilisation and the configuration used.
func WriteSummary(j *jsonline.Line, res *Result, in SummaryInput, link shaper.Config, spec aqm.Spec) []byte {
	st := &res.Stats
	j.Begin("summary")
	j.Int("packets", int64(res.Packets))
	j.Int("first_arrival", res.FirstArrival)
	j.Int("last_departure", res.LastDeparture)
	j.Int("busy", res.Busy)
	j.Float("utilisation", res.Utilisation(), 6)
	j.Int("pi_updates", int64(res.Updates))
	j.Uint("maxq", uint64(st.MaxQ))
	j.Uint("ecn_mark", st.ECNMark)
	j.Uint("step_marks", st.StepMarks)
	j.Uint("max_memory_used", st.MaxMemoryUsed)
	j.Uint("prob_raw", uint64(st.Prob))
	j.Object("queues")
	for k, name := range [2]string{"C", "L"} {
		writeQueue(j, name, &res.Queues[k], spec.Kind)
	}
	j.CloseObject()
	writeReplayXStats(j, st)
	j.Object("ecn_faults")
	for k := shaper.FaultNone + 1; int(k) < shaper.NumFaultKinds; k++ {
		j.Uint(k.String(), res.Faults[k])
	}
	j.CloseObject()
	j.Object("input")
	j.Int("skipped", int64(in.Skipped))
	j.Int("clamped", int64(in.Clamped))
	j.CloseObject()
	writeConfig(j, in, link, spec)
	return j.End()
}

func writeQueue(j *jsonline.Line, name string, q *QueueCounts, kind string) {
	markReasons, _ := Reasons(kind)
	dropReasons := DropReasons(kind)
	j.Object(name)
	j.Uint("arrivals", q.Arrivals)
	j.Uint("delivered", q.Delivered)
	j.Uint("bytes", q.Bytes)
	j.Uint("sent", q.Sent)
	j.Uint("marked", q.Marked())
	j.Uint("step_marks", q.Marks[aqm.ReasonStep])
	j.Object("marks")
	for _, why := range markReasons {
		j.Uint(why.String(), q.Marks[why])
	}
	j.CloseObject()
	j.Uint("dropped", q.Dropped())
	j.Object("drops")
	for _, why := range dropReasons {
		j.Uint(why.String(), q.Drops[why])
	}
	j.CloseObject()
	if mean, ok := q.SojournMean(); ok {
		j.Int("sojourn_mean", mean)
		j.Int("sojourn_max", q.SojournMax)
	} else {
		j.Null("sojourn_mean")
		j.Null("sojourn_max")
	}
	j.CloseObject()
}

func writeConfig(j *jsonline.Line, in SummaryInput, link shaper.Config, spec aqm.Spec) {
	j.Object("config")
	if in.Trace != "" {
		j.Str("trace", in.Trace)
	} else {
		j.Str("pcap", in.Pcap)
	}
	if in.Profile != "" {
		j.Str("profile", in.Profile)
		j.Str("direction", in.Direction)
	}
	if in.RateTrace != "" {
		j.Str("rate-trace", in.RateTrace)
	} else {
		j.Str("rate", fmt.Sprint(link.Rate))
	}
	var bps uint64 // 0: not one constant rate (unlimited, a trace)
	if c, ok := link.Rate.(shaper.Const); ok {
		bps = c.BitsPerSecond
	}
	j.Uint("rate_bps", bps)
	j.Int("delay", link.Delay)
	if link.Jitter.Amount != 0 {
		j.Str("jitter", link.Jitter.String())
	}
	if a := link.Aggregate; a.On() {
		j.Str("aggregate", fmt.Sprintf("%v,%db", time.Duration(a.Interval), a.Bytes)) // as --aggregate takes it
	}
	loss := "none"
	if in.Loss != "" {
		loss = in.Loss
	}
	j.Str("loss", loss)
	j.Str("ecn-fault", link.Fault.String())
	j.Uint("seed", in.Seed)
	j.Int("mtu", int64(in.MTU))
	j.Str("aqm", spec.Kind)
	for _, k := range in.Queue {
		j.Raw(k.Key, k.JSON)
	}
	if spec.Kind == aqm.KindDOCSIS { // figures the ramp and the service flow derive
		j.Uint("lg_range", uint64(spec.DOCSIS.LgRange))
		j.Uint("service_rate_bps", spec.DOCSIS.Rate)
	}
	j.CloseObject()
}

// writeReplayXStats adds the queue's own tc -s figures for the kinds other
// than dualpi2 and fifo (whose summary fields are already dualpi2's).
func writeReplayXStats(j *jsonline.Line, st *aqm.Stats) {
	switch st.Kind {
	case aqm.KindCoDel:
		x := &st.CoDel
		j.Object("codel")
		j.Uint("count", uint64(x.Count))
		j.Uint("lastcount", uint64(x.LastCount))
		j.Uint("maxpacket", uint64(x.MaxPacket))
		j.Uint("ecn_mark", x.ECNMark)
		j.Uint("ce_mark", x.CEMark)
		j.Uint("drop_overlimit", x.DropOverlimit)
		j.CloseObject()
	case aqm.KindPIE:
		x := &st.PIE
		j.Object("pie")
		j.Float("prob", float64(x.Prob)/aqm.PIEMaxProb, 9)
		j.Uint("pkts_in", x.PacketsIn)
		j.Uint("dropped", x.Dropped)
		j.Uint("overlimit", x.Overlimit)
		j.Uint("maxq", x.MaxQ)
		j.Uint("ecn_mark", x.ECNMark)
		j.CloseObject()
	case aqm.KindFQCodel:
		x := &st.FQ
		j.Object("fq_codel")
		j.Uint("maxpacket", uint64(x.MaxPacket))
		j.Uint("drop_overlimit", x.DropOverlimit)
		j.Uint("drop_overmemory", x.DropOvermemory)
		j.Uint("new_flow_count", x.NewFlowCount)
		j.Uint("ecn_mark", x.ECNMark)
		j.Uint("ce_mark", x.CEMark)
		j.CloseObject()
	case aqm.KindDOCSIS:
		j.Object("queue_protection")
		j.Uint("sanctioned_packets", st.QProt.SanctionedPackets)
		j.Uint("sanctioned_flows", st.QProt.SanctionedFlows)
		j.Uint("default_bucket", st.QProt.DefaultBucket)
		j.CloseObject()
		x := &st.DOCSISClassic
		j.Object("docsis_classic")
		j.Str("aqm", x.AQM)
		j.Float("prob_c", float64(x.ProbC)/aqm.DOCSISProbOne, 9)
		j.Int("qdelay", x.QDelay)
		j.Int("burst_allowance", x.BurstAllowance)
		j.Str("burst_state", x.BurstState)
		j.CloseObject()
	}
}

// SummaryInput is what the summary line says of a replay's input and
// settings beyond the link and queue it ran.
type SummaryInput struct {
	Trace, Pcap        string // the input: a CSV trace or a capture
	Profile, Direction string // --profile and the direction replayed, if any
	RateTrace          string // the link's rate trace file, if any
	Loss               string // the loss model as given; "" for none
	Seed               uint64
	MTU                int
	Skipped, Clamped   int // capture packets left out, and timestamps clamped
	// Queue is every knob of the queue in force, as the caller's table of
	// settings renders spec (key, value as JSON, in the flag's words):
	// replay spells no setting of its own.
	Queue []jsonline.Field
}
