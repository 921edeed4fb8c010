package analyze

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"
	"time"

	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/figure"
)

// dirAcc accumulates one direction while files are read.
type dirAcc struct {
	name    string
	classes [2]*classAcc // C, L
	flows   map[FlowKey]*flowAcc
	flowSeq []*flowAcc // in order of first sight
	other   *flowAcc   // every flow after the first maxFlows, summed
	bins    []binAcc
	base    int64 // absolute bin number (time/bin) of bins[0]
	pend    pendingSet
	trans   [4][4]uint64 // [in][out] codepoints
	csumErr [3]uint64    // by point

	matched, unmatchedOut  uint64
	sawIn, sawOut, sawDrop bool
}

// Memory bounds of the analysis. Samples are summarised as they arrive
// (sketch), so what is kept grows with flows, time bins and packets in
// flight, never with the packet count: maxFlows flows are tracked one
// by one and the rest summed as one "other" row; an ingress packet not
// seen at egress within the horizon is given up (pendingSet).
const (
	maxFlows = 10000
	// pendSlack is how far beyond the longest transit (sojourn, link and
	// delay) seen so far an ingress packet still waits for its egress.
	pendSlack = 3 * int64(time.Second)
	// maxTransit caps the transit that sets the horizon, so that one
	// packet with a wild timestamp cannot make every ingress packet wait
	// for ever: no bottleneck's queue plus path delay is longer.
	maxTransit = 10 * int64(time.Second)
)

type classAcc struct {
	res     ClassResult
	sojourn sojournAcc
	transit *sketch
	unseen  uint64 // ingress packets given up (see pendingSet.evict)
}

// sojournAcc summarises annotated sojourn times over the whole capture
// and per time bin.
type sojournAcc struct {
	all   *sketch
	byBin map[int64]*sketch // by absolute bin
}

func (s *sojournAcc) add(bin, v int64) {
	s.all.add(v)
	b := s.byBin[bin]
	if b == nil {
		b = newSketch()
		s.byBin[bin] = b
	}
	b.add(v)
}

type binAcc struct{ cls [2]binClassAcc }

type binClassAcc struct {
	sent, marked, dropped uint64
	unseen                uint64
	probSum               float64
	probN                 uint64
}

type flowAcc struct {
	res    FlowResult
	unseen uint64
	seen   [2]bool // classes seen, C and L
	fault  faultAcc
}

// saw records that a packet of the flow was sorted into class cls: a flow
// that changes class mid-way (Not-ECT first, then ECT(1)) shows both, in
// the order they came, not as whichever came first or last.
func (f *flowAcc) saw(cls int) {
	if f.seen[cls] {
		return
	}
	f.seen[cls] = true
	if f.res.Class == "" {
		f.res.Class = className(cls)
	} else {
		f.res.Class += "+" + className(cls)
	}
}

func newDirAcc(name string) *dirAcc {
	d := &dirAcc{name: name, flows: map[FlowKey]*flowAcc{}}
	for i := range d.classes {
		d.classes[i] = &classAcc{
			res: ClassResult{
				Class:   className(i),
				DropsBy: map[string]uint64{},
				MarksBy: map[string]uint64{},
			},
			sojourn: sojournAcc{all: newSketch(), byBin: map[int64]*sketch{}},
			transit: newSketch(),
		}
	}
	d.pend.head = map[uint64]chain{}
	d.pend.d = d
	return d
}

// otherFlows names the row that sums the flows beyond maxFlows.
const otherFlows = "other flows"

func (d *dirAcc) flow(k FlowKey) *flowAcc {
	if f := d.flows[k]; f != nil {
		return f
	}
	if len(d.flows) >= maxFlows {
		if d.other == nil {
			d.other = &flowAcc{res: FlowResult{Flow: otherFlows}}
		}
		return d.other
	}
	f := &flowAcc{res: FlowResult{Key: k}}
	d.flows[k] = f
	d.flowSeq = append(d.flowSeq, f)
	return f
}

// binFor makes sure absolute bin abs exists and returns its index into
// d.bins for now; indices shift when earlier bins are added, so callers
// store abs and use binAt.
func (d *dirAcc) binFor(abs int64) (int64, error) {
	if len(d.bins) == 0 {
		d.base = abs
		d.bins = append(d.bins, binAcc{})
		return abs, nil
	}
	lo, hi := min(d.base, abs), max(d.base+int64(len(d.bins))-1, abs)
	if hi-lo >= maxBins {
		return 0, fmt.Errorf("direction %s spans more than %d time bins: use a larger bin", d.name, maxBins)
	}
	if abs < d.base {
		grown := make([]binAcc, d.base-abs, int64(len(d.bins))+d.base-abs)
		d.bins = append(grown, d.bins...)
		d.base = abs
	}
	for int64(len(d.bins)) <= abs-d.base {
		d.bins = append(d.bins, binAcc{})
	}
	return abs, nil
}

func (d *dirAcc) binAt(abs int64) *binAcc { return &d.bins[abs-d.base] }

func (d *dirAcc) drop(cls int, reason string, f *flowAcc, bin int64) {
	c := d.classes[cls]
	c.res.Dropped++
	c.res.DropsBy[reason]++
	f.res.Dropped++
	d.binAt(bin).cls[cls].dropped++
}

// addTransit records a matched packet's time from in to out, which
// also sets how long ingress packets wait for their match.
func (d *dirAcc) addTransit(c *classAcc, v int64) {
	c.transit.add(v)
	d.pend.longest = min(max(d.pend.longest, v), maxTransit)
}

// pending is an ingress packet waiting to be seen at out or drop.
type pending struct {
	at    int64
	flow  *flowAcc
	bin   int64
	key   uint64
	next  int64 // position of the next entry with the same key, or -1
	class int8
	ecn   aqm.ECN
	tos   uint8
	live  bool // not matched yet
}

type chain struct{ first, last int64 }

// pendingSet is a multimap from match key to ingress packets, oldest
// first (a retransmission may repeat a key). Entries sit in a ring in the
// order they came, so the oldest is given up first: once the newest
// ingress packet is more than the horizon (the longest transit seen plus
// pendSlack) younger than an entry, its egress is not coming, and the
// entry is counted as unseen (a drop when the capture has an out point
// and no drop point) and forgotten. Memory is the packets of one horizon.
type pendingSet struct {
	head    map[uint64]chain
	ring    []pending // length a power of two
	lo, hi  int64     // positions [lo, hi) are in the ring
	n       int       // live entries
	unseen  uint64    // entries given up
	longest int64     // the longest transit seen, ns
	d       *dirAcc
}

func (s *pendingSet) at(pos int64) *pending { return &s.ring[pos&int64(len(s.ring)-1)] }

func (s *pendingSet) push(key uint64, p pending) {
	s.evict(p.at - s.longest - pendSlack)
	if s.hi-s.lo == int64(len(s.ring)) {
		s.grow()
	}
	p.key, p.next, p.live = key, -1, true
	pos := s.hi
	s.hi++
	*s.at(pos) = p
	s.n++
	if c, ok := s.head[key]; ok {
		s.at(c.last).next = pos
		c.last = pos
		s.head[key] = c
		return
	}
	s.head[key] = chain{pos, pos}
}

func (s *pendingSet) grow() {
	ring := make([]pending, max(1024, 2*len(s.ring)))
	for pos := s.lo; pos < s.hi; pos++ {
		ring[pos&int64(len(ring)-1)] = *s.at(pos)
	}
	s.ring = ring
}

func (s *pendingSet) pop(key uint64) (pending, bool) {
	c, ok := s.head[key]
	if !ok {
		return pending{}, false
	}
	e := s.at(c.first)
	p := *e
	if p.next < 0 {
		delete(s.head, key)
	} else {
		s.head[key] = chain{p.next, c.last}
	}
	e.live, e.flow = false, nil
	s.n--
	for s.lo < s.hi && !s.at(s.lo).live {
		s.lo++
	}
	return p, true
}

// evict gives up the entries that arrived before cutoff. The oldest live
// entry is always the first of its key's chain: both are in arrival order.
func (s *pendingSet) evict(cutoff int64) {
	for s.lo < s.hi {
		e := s.at(s.lo)
		if e.live {
			if e.at >= cutoff {
				return
			}
			p, _ := s.pop(e.key)
			s.unseen++
			c := s.d.classes[p.class]
			c.unseen++
			p.flow.unseen++
			p.flow.fault.missing[p.ecn]++
			s.d.binAt(p.bin).cls[p.class].unseen++
			continue // pop moved lo on
		}
		s.lo++
	}
}

// each calls f for every entry still pending.
func (s *pendingSet) each(f func(*pending)) {
	for pos := s.lo; pos < s.hi; pos++ {
		if e := s.at(pos); e.live {
			f(e)
		}
	}
}

// Result completes the analysis. Call it once, after the last AddFile.
func (a *Analyzer) Result() *Result {
	res := &Result{
		BinMs:     float64(a.bin) / 1e6,
		CouplingK: a.opt.CouplingK,
		Files:     a.files,
	}
	first := true
	for _, name := range a.dirList {
		d := a.dirs[name]
		if len(d.bins) > 0 && (first || d.base*a.bin < res.Start) {
			res.Start, first = d.base*a.bin, false
		}
	}
	for _, name := range a.ifList {
		res.Interfaces = append(res.Interfaces, *a.ifaces[name])
	}
	for _, name := range a.dirList {
		res.Directions = append(res.Directions, a.dirs[name].result(a, res.Start))
	}
	res.RTT = a.rttResult()
	return res
}

func (d *dirAcc) result(a *Analyzer, start int64) *DirectionResult {
	r := &DirectionResult{
		Name:           d.name,
		Matched:        d.matched,
		UnmatchedOut:   d.unmatchedOut,
		UnmatchedIn:    uint64(d.pend.n) + d.pend.unseen,
		ChecksumErrors: map[string]uint64{},
	}
	// An ingress packet still waiting at the end never arrived either.
	d.pend.each(func(p *pending) { p.flow.fault.missing[p.ecn]++ })
	r.ECNFaultsChecked = d.sawIn && d.sawOut
	// Without a drop tap, an ingress packet never seen at egress was
	// dropped (or lost) on the way.
	if d.sawIn && d.sawOut && !d.sawDrop {
		d.pend.each(func(p *pending) { d.drop(int(p.class), "unseen", p.flow, p.bin) })
		// And those given up while reading, counted where they belong.
		for _, c := range d.classes {
			c.res.Dropped += c.unseen
			if c.unseen > 0 {
				c.res.DropsBy["unseen"] += c.unseen
			}
		}
		for _, f := range d.flowSeq {
			f.res.Dropped += f.unseen
		}
		if d.other != nil {
			d.other.res.Dropped += d.other.unseen
		}
		for i := range d.bins {
			for cls := range d.bins[i].cls {
				b := &d.bins[i].cls[cls]
				b.dropped += b.unseen
			}
		}
	}
	for pt, n := range d.csumErr {
		if n > 0 {
			r.ChecksumErrors[pointNames[pt]] = n
		}
	}
	for in := aqm.NotECT; in <= aqm.CE; in++ {
		for out := aqm.NotECT; out <= aqm.CE; out++ {
			n := d.trans[in][out]
			if n == 0 {
				continue
			}
			ok := ValidTransition(in, out)
			r.Transitions = append(r.Transitions, Transition{From: in.String(), To: out.String(), Packets: n, Valid: ok})
			if !ok {
				r.InvalidTransitions += n
			}
		}
	}
	for _, c := range d.classes {
		cr := c.res
		if cr.Sent > 0 {
			cr.MarkFraction = float64(cr.Marked) / float64(cr.Sent)
		}
		if cr.Sent+cr.Dropped > 0 {
			cr.DropFraction = float64(cr.Dropped) / float64(cr.Sent+cr.Dropped)
		}
		cr.Sojourn = c.sojourn.all.percentiles()
		cr.sojournDist = c.sojourn.all.curve()
		cr.Transit = c.transit.percentiles()
		r.Classes = append(r.Classes, &cr)
	}
	for _, f := range d.flowSeq {
		fr := f.res
		fr.Flow = flowString(fr.Key)
		if r.ECNFaultsChecked {
			fr.ECNFaults = f.fault.faults()
			if len(fr.ECNFaults) > 0 {
				r.FaultyFlows++
			}
		}
		r.Flows = append(r.Flows, &fr)
	}
	if d.other != nil {
		fr := d.other.res
		r.Flows = append(r.Flows, &fr)
	}
	slices.SortStableFunc(r.Flows, func(x, y *FlowResult) int {
		bx := x.In.Total().Bytes + x.Out.Total().Bytes
		by := y.In.Total().Bytes + y.Out.Total().Bytes
		return cmp.Compare(by, bx)
	})
	r.Bins = d.binResults(a.bin, start)
	r.Coupling = coupling(r.Classes[1], r.Classes[0], a.opt.CouplingK)
	return r
}

// binResults turns the accumulated bins into the series, with sojourn
// percentiles per bin from the annotation samples' sketches.
func (d *dirAcc) binResults(bin, start int64) []BinResult {
	out := make([]BinResult, len(d.bins))
	for i := range d.bins {
		out[i].Start = float64((d.base+int64(i))*bin-start) / 1e9
		for cls := range 2 {
			b := d.bins[i].cls[cls]
			bc := &out[i].Classes[cls]
			bc.Sent, bc.Marked, bc.Dropped = b.sent, b.marked, b.dropped
			if b.sent > 0 {
				bc.MarkFraction = float64(b.marked) / float64(b.sent)
			}
			if b.sent+b.dropped > 0 {
				bc.DropFraction = float64(b.dropped) / float64(b.sent+b.dropped)
			}
			if b.probN > 0 {
				bc.Prob = b.probSum / float64(b.probN)
			}
		}
	}
	for cls, c := range d.classes {
		for bin, s := range c.sojourn.byBin {
			bc := &out[bin-d.base].Classes[cls]
			bc.SojournP50 = ms(s.quantile(0.50))
			bc.SojournP99 = ms(s.quantile(0.99))
		}
	}
	return out
}

// coupling checks pC against (pL/k)² (RFC 9332 §2.4).
func coupling(l, c *ClassResult, k float64) Coupling {
	cp := Coupling{K: k}
	lTotal, cTotal := l.Sent+l.Dropped, c.Sent+c.Dropped
	if lTotal == 0 || cTotal == 0 {
		return cp
	}
	cp.Defined = true
	cp.PL = float64(l.Marked) / float64(lTotal)
	// Tail drops and link loss are not the AQM's signal.
	aqmDrops := c.Dropped - c.DropsBy[aqm.ReasonLimit.String()] - c.DropsBy[aqm.ReasonLoss.String()]
	cp.PC = float64(c.Marked+aqmDrops) / float64(cTotal)
	cp.Expected = sq(cp.PL / k)
	cp.Ratio = ratio(cp.PC, cp.Expected)
	// With annotations: among L packets the step AQM did not mark, the
	// fraction marked by the coupled probability estimates k·p'
	// (RFC 9332 §4.2.1) without the step marks' bias.
	if l.Annotated > 0 {
		step, coupled := l.MarksBy[aqm.ReasonStep.String()], l.MarksBy[aqm.ReasonCoupled.String()]
		if rest := lTotal - step; rest > 0 {
			cp.PLCoupled = float64(coupled) / float64(rest)
			cp.ExpectedCoupled = sq(cp.PLCoupled / k)
			cp.Ratio = ratio(cp.PC, cp.ExpectedCoupled)
		}
	}
	return cp
}

func sq(x float64) float64 { return x * x }

func ratio(x, y float64) float64 {
	if y == 0 {
		return 0
	}
	return x / y
}

func ms(ns int64) float64 { return figure.Ms(time.Duration(ns)) }

var protoNames = map[uint8]string{1: "icmp", 6: "tcp", 17: "udp", 58: "icmpv6", 132: "sctp", 33: "dccp", 136: "udplite"}

func flowString(k FlowKey) string {
	proto, ok := protoNames[k.Proto]
	if !ok {
		proto = fmt.Sprintf("proto-%d", k.Proto)
	}
	if k.SrcPort == 0 && k.DstPort == 0 {
		return fmt.Sprintf("%s %s > %s", proto, k.Src, k.Dst)
	}
	return fmt.Sprintf("%s %s > %s", proto,
		netip.AddrPortFrom(k.Src, k.SrcPort), netip.AddrPortFrom(k.Dst, k.DstPort))
}
