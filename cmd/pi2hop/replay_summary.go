package main

import (
	"fmt"

	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/shaper"
)

// writeSummary prints the last line of a replay: per-queue counts, the
// queue's own statistics, link utilisation and the configuration used.
func (r *replayer) writeSummary(a *replayArgs, link shaper.Config, spec aqm.Spec) {
	end := r.lastDep
	st := r.q.Stats(end)
	busy := r.link.Stats().Busy
	span := end - r.firstArrival
	util := 0.0
	if span > 0 {
		util = float64(busy) / float64(span)
	}

	j := &r.j
	j.begin("summary")
	j.int("packets", int64(r.packets))
	j.int("first_arrival", r.firstArrival)
	j.int("last_departure", end)
	j.int("busy", busy)
	j.float("utilisation", util, 6)
	j.int("pi_updates", int64(r.piUpdates))
	j.uint("maxq", uint64(st.MaxQ))
	j.uint("ecn_mark", st.ECNMark)
	j.uint("step_marks", st.StepMarks)
	j.uint("max_memory_used", st.MaxMemoryUsed)
	j.uint("prob_raw", uint64(st.Prob))
	j.object("queues")
	for k, name := range [2]string{"C", "L"} {
		r.writeQueue(name, &r.queues[k])
	}
	j.closeObject()
	j.object("input")
	j.int("skipped", int64(r.in.skipped))
	j.int("clamped", int64(r.in.clamped))
	j.closeObject()
	r.writeConfig(a, link, spec)
	r.write(j.end())
}

func (r *replayer) writeQueue(name string, q *queueCounts) {
	j := &r.j
	j.object(name)
	j.uint("arrivals", q.arrivals)
	j.uint("delivered", q.delivered)
	j.uint("bytes", q.bytes)
	j.uint("sent", q.sent)
	var marked, dropped uint64
	for k := range q.marks {
		marked += q.marks[k]
		dropped += q.drops[k]
	}
	j.uint("marked", marked)
	j.uint("step_marks", q.marks[aqm.ReasonStep])
	j.object("marks")
	for _, why := range [...]aqm.Reason{aqm.ReasonStep, aqm.ReasonCoupled, aqm.ReasonClassic, aqm.ReasonOverload} {
		j.uint(why.String(), q.marks[why])
	}
	j.closeObject()
	j.uint("dropped", dropped)
	j.object("drops")
	for why := aqm.ReasonStep; int(why) < aqm.NumReasons; why++ {
		j.uint(why.String(), q.drops[why])
	}
	j.closeObject()
	if q.dequeued > 0 {
		j.int("sojourn_mean", q.sojournSum/int64(q.dequeued))
		j.int("sojourn_max", q.sojournMax)
	} else {
		j.null("sojourn_mean")
		j.null("sojourn_max")
	}
	j.closeObject()
}

func (r *replayer) writeConfig(a *replayArgs, link shaper.Config, spec aqm.Spec) {
	j := &r.j
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
		j.float("alpha", float64(c.Alpha)/256, 8)
		j.float("beta", float64(c.Beta)/256, 8)
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
