package hop

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/rtt"
)

// flowCopy is the owner's table as it handed it to a reader: the flows in
// use, the "other" entry and what the reader needs to turn counters into
// figures.
type flowCopy struct {
	n        int
	e        [FlowTableSize]flowEntry
	other    flowEntry
	evicted  uint64
	now      int64  // hop clock when taken
	bps      uint64 // the link's constant rate, 0 if not constant
	ql, qlsc int64  // Queue Protection's CRITICALqL and CRITICALqLSCORE
}

// flowEntry is a flow's state as copied for a reader: both parts.
type flowEntry struct {
	flowHot
	flowCold
}

// entry returns flow i's state.
func (t *flowCounters) entry(i int) flowEntry {
	return flowEntry{t.hot[i], t.cold[i]}
}

// wide joins a 32-bit counter and its wraps.
func wide(n, wraps uint32) uint64 { return uint64(wraps)<<32 | uint64(n) }

// in and out are the flow's packets and bytes by codepoint, as read and
// as released.
func (e *flowEntry) in() (c [4]aqm.Tally) {
	for k := range c {
		c[k] = aqm.Tally{Packets: wide(e.inPk[k], e.inWraps[k]), Bytes: e.inB[k]}
	}
	return c
}

func (e *flowEntry) out() (c [4]aqm.Tally) {
	for k := range c {
		c[k] = aqm.Tally{Packets: wide(e.outPk[k], e.outWraps[k]), Bytes: e.outB[k]}
	}
	return c
}

// copyFlows copies the table into c: on the owner, between batches.
func (o *owner) copyFlows(c *flowCopy, now int64) {
	t := o.rep.flows
	c.n = 0
	for i, tg := range t.tags {
		if tg != 0 {
			c.e[c.n].flowHot = t.hot[i]
			c.e[c.n].flowCold = t.cold[i]
			c.n++
		}
	}
	c.other.flowHot, c.other.flowCold = t.hot[otherFlow], t.cold[otherFlow]
	c.evicted, c.now = t.evicted, now
	c.bps = o.constBps()
	c.ql, c.qlsc = t.scorer.Thresholds()
}

// FlowTable is one direction's flows, as its owner counted them.
type FlowTable struct {
	Dir      string    `json:"dir"`
	Taken    time.Time `json:"time"`
	Capacity int       `json:"capacity"` // flows the table holds
	Active   int       `json:"flows"`    // flows in it
	Evicted  uint64    `json:"evicted"`  // flows that gave their place to newer ones
	// Other counts the packets of no flow in the table: those of new flows
	// while every flow of their set had a packet in flight, and packets
	// without a well-formed IP header.
	Other FlowCounts `json:"other"`
	// QProt is the Queue Protection that L4S flows are scored against.
	QProt QProtThresholds `json:"qprot"`
	// RTT are the counters of the hop's passive RTT table (package rtt):
	// one table sees both directions, so up and down show the same; nil
	// with Config.NoRTT.
	RTT *rtt.Stats `json:"rtt,omitempty"`
	// Flows are the flows, highest rate first (then most bytes), at most
	// the number asked for.
	Flows []Flow `json:"top"`
}

// QProtThresholds are RFC 9957's CRITICALqL and CRITICALqLSCORE in force.
type QProtThresholds struct {
	LatencyMs float64 `json:"latency_threshold_ms"`
	ScoreMs   float64 `json:"score_threshold_ms"`
}

// FlowCounts are a flow's packet counters.
type FlowCounts struct {
	In    aqm.ByECN         `json:"in"`  // as read, by the codepoint they came with
	Out   aqm.ByECN         `json:"out"` // released to be written, by the codepoint they left with
	Marks uint64            `json:"marks"`
	Drops map[string]uint64 `json:"drops,omitempty"` // by reason, those that happened
}

// Flow classes: the codepoint a flow sends.
const (
	ClassL4S        = "L4S"         // ECT(1)
	ClassClassicECN = "Classic ECN" // ECT(0)
	ClassNotECT     = "Not-ECT"
	ClassChanged    = "changed" // switched codepoint mid-flow
	ClassUnknown    = "unknown" // nothing but CE seen
)

// Flow is one flow of a direction (a 5-tuple, as the hop reads it).
type Flow struct {
	Proto string    `json:"proto"` // tcp, udp, icmp, ... or the protocol number
	Src   string    `json:"src"`   // address:port (IPv6 [address]:port); port 0 without ports
	Dst   string    `json:"dst"`
	First time.Time `json:"first"` // first packet read
	Last  time.Time `json:"last"`  // last packet read
	FlowCounts
	Queue        string  `json:"queue"`    // L or C, the queue of its last packet released
	RateBps      uint64  `json:"rate_bps"` // delivered over the last second
	Share        float64 `json:"share"`    // of the link's rate (of all flows' when the rate is not fixed)
	SojournP50Ms float64 `json:"sojourn_p50_ms"`
	SojournP99Ms float64 `json:"sojourn_p99_ms"`

	Class     string `json:"class"`     // ClassL4S, ClassClassicECN, ClassNotECT, ClassChanged or ClassUnknown
	Codepoint string `json:"codepoint"` // what it sent first: ECT(1), ECT(0), Not-ECT
	// ChangedTo and ChangedAt say what the flow switched to, and when
	// (class changed).
	ChangedTo string     `json:"changed_to,omitempty"`
	ChangedAt *time.Time `json:"changed_at,omitempty"`
	// QProt is the flow's Queue Protection score, for flows that used the
	// L-queue.
	QProt   *FlowQProt `json:"qprot,omitempty"`
	Verdict string     `json:"verdict"`
	// RTT is the flow's passive round-trip times, both directions' packets
	// timed together (an up flow and its down flow show the same); nil
	// when the RTT table holds no flow of its 5-tuple, or with
	// Config.NoRTT.
	RTT *FlowRTT `json:"rtt,omitempty"`
}

// FlowQProt is a flow's queuing score (RFC 9957), kept passively: what
// DOCSIS Queue Protection would have made of the delays its L-queue
// packets met, whatever the hop's queue discipline.
type FlowQProt struct {
	// Sanction: in the flow's last second of activity, qprotect would have
	// sanctioned at least SanctionShare of its L-queue packets.
	Sanction bool `json:"would_sanction"`
	// ScoreMs is the highest score of the packets it would have
	// sanctioned in that second, weighted by the delay each met, as
	// qprotect compares it with ThresholdMs (score·qdelay/CRITICALqL);
	// 0 without any.
	ScoreMs     float64 `json:"score_ms"`
	ThresholdMs float64 `json:"threshold_ms"`
	// Packets is how many packets qprotect would have sanctioned, in the
	// flow's life and in its last second.
	Packets       uint64 `json:"sanctioned_packets"`
	RecentPackets uint64 `json:"recent_sanctioned_packets"`
	// RecentL is how many of the flow's packets used the L-queue in its
	// last second.
	RecentL uint64 `json:"recent_l_packets"`
}

// SanctionShare is the share of a flow's L-queue packets in its last
// second that qprotect must sanction for the flow's verdict to be "would
// be sanctioned": qprotect judges each packet, and a responsive flow sees
// a few of its packets sanctioned when the queue spikes (its start-up
// before the first response to marks, a stall of the machine), where a
// flow that builds the queue has most of them sanctioned.
const SanctionShare = 0.1

var protoNames = map[uint8]string{1: "icmp", 6: "tcp", 17: "udp", 33: "dccp", 58: "icmpv6", 132: "sctp", 136: "udplite"}

func (k *flowKey) endpoints() (src, dst string) {
	a, b := k.addrPorts()
	if !a.IsValid() {
		return "", ""
	}
	return a.String(), b.String()
}

func nsToMs(ns int64) float64 { return float64(ns) / 1e6 }

func counts(e *flowEntry) FlowCounts {
	in, out := e.in(), e.out()
	c := FlowCounts{In: aqm.ByECNOf(&in), Out: aqm.ByECNOf(&out), Marks: wide(e.marks, e.marksWraps)}
	for r, n := range e.drops {
		if n > 0 {
			if c.Drops == nil {
				c.Drops = map[string]uint64{}
			}
			c.Drops[aqm.Reason(r).String()] = n
		}
	}
	return c
}

// rate is the flow's delivered rate over the second before now, bit/s:
// the current window's bytes plus the share of the previous window's that
// falls in that second.
func (e *flowEntry) rate(now int64) uint64 {
	d := now - e.winStart
	cur, prev := e.winBytes, e.prevWin
	switch {
	case d >= 2*flowWindow:
		return 0
	case d >= flowWindow:
		cur, prev, d = 0, cur, d-flowWindow
	}
	d = max(d, 0)
	bytes := float64(cur) + float64(prev)*float64(flowWindow-d)/float64(flowWindow)
	return uint64(bytes * 8 * 1e9 / float64(flowWindow))
}

// table turns a copy into a FlowTable of the top flows by rate, each
// with its RTT from rj (nil: none).
func (c *flowCopy) table(d Dir, top int, rj *rttJoin) FlowTable {
	wall := func(t int64) time.Time { return time.Unix(0, t+UnixOffset()) }
	ft := FlowTable{
		Dir: d.String(), Taken: wall(c.now), Capacity: FlowTableSize, Active: c.n, Evicted: c.evicted,
		Other: counts(&c.other),
		QProt: QProtThresholds{nsToMs(c.ql), nsToMs(c.qlsc)},
	}
	if rj != nil && rj.ok {
		st := rj.stats
		ft.RTT = &st
	}
	idx := make([]int, c.n)
	rates := make([]uint64, c.n)
	var sum uint64
	for i := range idx {
		idx[i] = i
		rates[i] = c.e[i].rate(c.now)
		sum += rates[i]
	}
	slices.SortFunc(idx, func(a, b int) int {
		if r := cmp.Compare(rates[b], rates[a]); r != 0 {
			return r
		}
		return cmp.Compare(c.e[b].outB[0]+c.e[b].outB[1]+c.e[b].outB[2]+c.e[b].outB[3],
			c.e[a].outB[0]+c.e[a].outB[1]+c.e[a].outB[2]+c.e[a].outB[3])
	})
	if top >= 0 && top < len(idx) {
		idx = idx[:top]
	}
	capacity := c.bps
	if capacity == 0 {
		capacity = sum
	}
	ft.Flows = make([]Flow, 0, len(idx))
	for _, i := range idx {
		e := &c.e[i]
		f := Flow{
			Proto: protoNames[e.key.proto], First: wall(e.first), Last: wall(e.last),
			FlowCounts: counts(e), RateBps: rates[i],
			SojournP50Ms: nsToMs(e.sojourn.quantile(0.5)), SojournP99Ms: nsToMs(e.sojourn.quantile(0.99)),
		}
		if f.Proto == "" {
			f.Proto = fmt.Sprint(e.key.proto)
		}
		f.Src, f.Dst = e.key.endpoints()
		if e.sojourn.total() > 0 {
			f.Queue = e.queue.String()
		}
		if capacity > 0 {
			f.Share = float64(rates[i]) / float64(capacity)
		}
		c.classify(e, &f, wall)
		f.RTT = rj.flowRTT(d, &e.key)
		ft.Flows = append(ft.Flows, f)
	}
	return ft
}

// classify fills the flow's class and verdict: for L4S flows Queue
// Protection's, for the others their share of the link and their drops.
func (c *flowCopy) classify(e *flowEntry, f *Flow, wall func(int64) time.Time) {
	switch e.cls {
	case aqm.ECT1:
		f.Class = ClassL4S
	case aqm.ECT0:
		f.Class = ClassClassicECN
	case aqm.NotECT:
		f.Class = ClassNotECT
	default:
		f.Class = ClassUnknown
	}
	if e.cls != noECN {
		f.Codepoint = e.cls.String()
	}
	if e.changed {
		f.Class, f.ChangedTo = ClassChanged, e.changeTo.String()
		at := wall(e.changedAt)
		f.ChangedAt = &at
	}
	if e.qpSanctioned > 0 || e.cls == aqm.ECT1 || (e.changed && e.changeTo == aqm.ECT1) {
		q := &FlowQProt{ThresholdMs: nsToMs(c.qlsc), Packets: e.qpSanctioned}
		// The windows as of the flow's last packet: its last second of activity.
		q.RecentPackets = uint64(e.qpWin) + uint64(e.qpPrev)
		q.RecentL = uint64(e.qpLWin) + uint64(e.qpLPrev)
		q.Sanction = q.RecentPackets > 0 && float64(q.RecentPackets) >= SanctionShare*float64(q.RecentL)
		q.ScoreMs = nsToMs(max(e.qpWorstWin, e.qpWorstP))
		f.QProt = q
	}
	var drops uint64
	for _, n := range e.drops {
		drops += n
	}
	switch {
	case f.Class == ClassChanged:
		f.Verdict = fmt.Sprintf("changed codepoint mid-flow: %s to %s at %s", f.Codepoint, f.ChangedTo, f.ChangedAt.Format("15:04:05.000"))
	case f.Class == ClassL4S && f.QProt.Sanction:
		f.Verdict = fmt.Sprintf("would be sanctioned by DOCSIS queue protection (score %.1fms over threshold %.1fms)", f.QProt.ScoreMs, f.QProt.ThresholdMs)
	case f.Class == ClassL4S && f.QProt.RecentPackets > 0:
		f.Verdict = fmt.Sprintf("well-behaved (%d of %d packets over DOCSIS queue protection's threshold in its last second)", f.QProt.RecentPackets, f.QProt.RecentL)
	case f.Class == ClassL4S:
		f.Verdict = "well-behaved"
	default:
		f.Verdict = fmt.Sprintf("%.0f%% of the link, %d dropped", 100*f.Share, drops)
	}
}
