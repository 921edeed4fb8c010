package main

import (
	"fmt"

	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/replay"
	"github.com/pi2hop/pi2hop/shaper"
)

// formatSummary returns the last line of a replay: per-queue counts, the
// queue's own statistics, link utilisation and the configuration used.
func formatSummary(j *jsonLine, res *replay.Result, in inputCounts, a *replayArgs, link shaper.Config, spec aqm.Spec) []byte {
	st := &res.Stats
	j.begin("summary")
	j.int("packets", int64(res.Packets))
	j.int("first_arrival", res.FirstArrival)
	j.int("last_departure", res.LastDeparture)
	j.int("busy", res.Busy)
	j.float("utilisation", res.Utilisation(), 6)
	j.int("pi_updates", int64(res.Updates))
	j.uint("maxq", uint64(st.MaxQ))
	j.uint("ecn_mark", st.ECNMark)
	j.uint("step_marks", st.StepMarks)
	j.uint("max_memory_used", st.MaxMemoryUsed)
	j.uint("prob_raw", uint64(st.Prob))
	j.object("queues")
	for k, name := range [2]string{"C", "L"} {
		writeQueue(j, name, &res.Queues[k])
	}
	j.closeObject()
	j.object("input")
	j.int("skipped", int64(in.skipped))
	j.int("clamped", int64(in.clamped))
	j.closeObject()
	writeConfig(j, a, link, spec)
	return j.end()
}

func writeQueue(j *jsonLine, name string, q *replay.QueueCounts) {
	j.object(name)
	j.uint("arrivals", q.Arrivals)
	j.uint("delivered", q.Delivered)
	j.uint("bytes", q.Bytes)
	j.uint("sent", q.Sent)
	j.uint("marked", q.Marked())
	j.uint("step_marks", q.Marks[aqm.ReasonStep])
	j.object("marks")
	for _, why := range [...]aqm.Reason{aqm.ReasonStep, aqm.ReasonCoupled, aqm.ReasonClassic, aqm.ReasonOverload} {
		j.uint(why.String(), q.Marks[why])
	}
	j.closeObject()
	j.uint("dropped", q.Dropped())
	j.object("drops")
	for why := aqm.ReasonStep; int(why) < aqm.NumReasons; why++ {
		j.uint(why.String(), q.Drops[why])
	}
	j.closeObject()
	if mean, ok := q.SojournMean(); ok {
		j.int("sojourn_mean", mean)
		j.int("sojourn_max", q.SojournMax)
	} else {
		j.null("sojourn_mean")
		j.null("sojourn_max")
	}
	j.closeObject()
}

func writeConfig(j *jsonLine, a *replayArgs, link shaper.Config, spec aqm.Spec) {
	f := a.link
	j.object("config")
	if a.trace != "" {
		j.str("trace", a.trace)
	} else {
		j.str("pcap", a.pcap)
	}
	if f.given("rate-trace") {
		j.str("rate_trace", f.rateTrace)
	} else {
		j.str("rate", fmt.Sprint(link.Rate))
	}
	j.int("delay", link.Delay)
	loss := f.loss.text
	if loss == "" {
		loss = "none"
	}
	j.str("loss", loss)
	j.uint("seed", f.seed())
	j.int("mtu", int64(f.mtuBytes()))
	j.str("aqm", spec.Kind)
	switch spec.Kind {
	case aqm.KindFIFO:
		j.uint("limit", uint64(spec.FIFO.Limit))
		j.uint("byte_limit", spec.FIFO.ByteLimit)
	case aqm.KindDualPI2:
		c := &spec.DualPI2
		j.uint("limit", uint64(c.Limit))
		j.uint("memlimit", c.MemLimit)
		j.int("target", c.Target)
		j.int("tupdate", c.Tupdate)
		// Gains go over netlink as Hz·256, so 8 decimals print them exactly.
		j.float("alpha", aqm.GainHz(c.Alpha), 8)
		j.float("beta", aqm.GainHz(c.Beta), 8)
		j.uint("coupling", uint64(c.Coupling))
		if c.StepInPackets {
			j.int("step_thresh_pkts", c.StepThresh)
		} else {
			j.int("step_thresh", c.StepThresh)
		}
		j.uint("min_qlen_step", uint64(c.MinQlenStep))
		j.str("overload", choose(c.DropOverload, "drop", "overflow"))
		j.str("drop_at", choose(c.DropEnqueue, "enqueue", "dequeue"))
		j.uint("classic_protection", uint64(c.ClassicProtection))
		j.str("ecn_mask", choose(c.ECNMask == 3, "any", "l4s"))
	}
	j.closeObject()
}

func choose(cond bool, yes, no string) string {
	if cond {
		return yes
	}
	return no
}
