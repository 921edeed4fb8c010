package hop

// The owner's flow table: every packet is counted against its flow (the
// 5-tuple) as it arrives and at its fate, in a fixed table that the owner
// alone touches. It allocates nothing and takes no lock; readers get a
// copy through the snapshot handover (see control.go).

import (
	"encoding/binary"
	"math/bits"

	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/figure"
)

// FlowTableSize is how many flows each direction's table holds. Beyond
// it, a new flow takes the place of the flow of its two sets that has
// nothing in flight and was seen longest ago; when every flow of both
// sets has a packet in flight the new one is counted as "other".
const FlowTableSize = 4096

// The table is set-associative with two choices: a flow's keyed hash
// picks two sets of flowWays entries, and the flow lives in either, so a
// lookup and an eviction look at 2·flowWays entries at most, whatever the
// load. With one set per flow, a full table's busiest sets hold more flows
// than ways and evict at every packet (a flow's chance of a set beyond
// its ways is a Poisson tail at a mean of flowWays); with two, a new flow
// goes to the set with room and the table nearly fills before any evicts.
const (
	flowWays    = 8
	flowSetBits = 9
	flowSets    = 1 << flowSetBits
	// otherFlow is the index of the entry that counts what the table
	// could not hold (and packets without a 5-tuple).
	otherFlow = FlowTableSize
	// flowWindow is the period a flow's rate and recent Queue Protection
	// verdict are taken over, ns.
	flowWindow = int64(1_000_000_000)
	// noECN marks a flow whose codepoint class is not known yet (only CE
	// arrived so far).
	noECN = aqm.ECN(0xff)
)

// A flow's hash, h|1, is laid out as: bit 0 set (0 is an empty way),
// then its first set, its home way in that set, its second set.
const (
	flowHomeShift = 1 + flowSetBits
	flowAltShift  = flowHomeShift + 3 // log2(flowWays)
)

// flowSetsOf returns the first entries of h's two sets and its home
// entry (in the first).
func flowSetsOf(h uint32) (a, b, home int) {
	a = int(h>>1&(flowSets-1)) * flowWays
	b = int(h>>flowAltShift&(flowSets-1)) * flowWays
	return a, b, a + int(h>>flowHomeShift&(flowWays-1))
}

// flowKey is a flow's 5-tuple as the packet carries it: the addresses
// as 8-byte words of the header (IPv4 source and destination in the
// first, IPv6 in all four), so a packet is compared with a key in place,
// word by word.
type flowKey struct {
	addrs   [4]uint64
	ports   uint32 // source port << 16 | destination port
	proto   uint8
	version uint8
}

// portsWord returns the ports of a valid header as aqm's flow hash takes
// them (0 when it takes none).
func portsWord(v aqm.Header, version int) uint32 {
	switch version {
	case 4:
		ihl := int(v[0]&0x0f) * 4
		if portsOf(v[9]) && binary.BigEndian.Uint16(v[6:8])&0x1fff == 0 && ihl+4 <= int(binary.BigEndian.Uint16(v[2:4])) {
			return binary.BigEndian.Uint32(v[ihl:])
		}
	case 6:
		if portsOf(v[6]) && binary.BigEndian.Uint16(v[4:6]) >= 4 {
			return binary.BigEndian.Uint32(v[40:])
		}
	}
	return 0
}

// matches reports whether the valid header v of IP version version is
// of flow k. The addresses and protocol are compared first: a different
// flow seldom shares them, so the ports are read only for the flow that
// is most likely k.
func (k *flowKey) matches(v aqm.Header, version int) bool {
	le := binary.LittleEndian
	if version == 4 {
		return k.version == 4 && k.addrs[0] == le.Uint64(v[12:20]) && k.proto == v[9] && k.ports == portsWord(v, 4)
	}
	return k.matches6(v)
}

// matches6 is matches for IPv6.
func (k *flowKey) matches6(v aqm.Header) bool {
	le := binary.LittleEndian
	return k.version == 6 && k.proto == v[6] && k.addrs[0] == le.Uint64(v[8:16]) && k.addrs[1] == le.Uint64(v[16:24]) &&
		k.addrs[2] == le.Uint64(v[24:32]) && k.addrs[3] == le.Uint64(v[32:40]) && k.ports == portsWord(v, 6)
}

// keyOf reads the 5-tuple of a valid header of IP version version.
func keyOf(v aqm.Header, version int) flowKey {
	le := binary.LittleEndian
	k := flowKey{version: uint8(version), ports: portsWord(v, version)}
	if version == 4 {
		k.addrs[0] = le.Uint64(v[12:20])
		k.proto = v[9]
	} else {
		for i := range k.addrs {
			k.addrs[i] = le.Uint64(v[8+8*i:])
		}
		k.proto = v[6]
	}
	return k
}

// bytes returns the key's addresses as the header holds them.
func (k *flowKey) bytes() (b [32]byte) {
	for i, a := range k.addrs {
		binary.LittleEndian.PutUint64(b[8*i:], a)
	}
	return b
}

// portsOf reports whether a transport header starts with two ports (as
// aqm's flow hash decides).
func portsOf(proto byte) bool {
	switch proto {
	case 6, 17, 33, 132, 136:
		return true
	}
	return false
}

// flowHot is what a flow's every packet touches, in three cache lines:
// the key a lookup compares, the counters of its arrival and its
// release, the rate window and the Queue Protection bucket. Anything
// touched only at a rare event (a new flow, a drop, a class change, the
// turn of a window, a sanctioned packet, a counter wrap) is in flowCold,
// so that the lines a packet pulls in are few and the hot part of the
// table, what many flows keep in the caches, is a quarter of the whole.
// Packet counters are 32-bit here; a wrap carries into flowCold.
type flowHot struct {
	key      flowKey
	inFlight int32 // packets taken in and not yet fated: the entry must stay
	cls      aqm.ECN
	changed  bool // it switched codepoint (to flowCold.changeTo)
	queue    aqm.Class
	_        uint8
	last     int64 // last arrival, hop clock
	inPk     [4]uint32
	inB      [4]uint64 // by codepoint, as read
	outPk    [4]uint32
	outB     [4]uint64 // by codepoint, as released
	marks    uint32    // CE set by the AQM

	// L-queue packets released in the current rate window.
	qpLWin uint32

	// Delivered bytes in the current rate window, from winStart.
	winStart int64
	winBytes uint64

	// Queue Protection's passive score (aqm.QProtScorer): the bucket's
	// expiry, and the packets it would have sanctioned in the current
	// window.
	qpExp int64
	qpWin uint32
	_     uint32
}

// flowHotSize is flowHot's size: a whole number of cache lines, so that
// an entry of the table (allocated page-aligned) never straddles more
// lines than it fills.
const flowHotSize = 192

// flowCold is the rest of a flow's state: written at rare events, read
// when the table is copied; the sojourn histogram, of which a packet
// touches one word.
type flowCold struct {
	sojourn flowHist

	first     int64 // first arrival, hop clock
	changedAt int64
	changeTo  aqm.ECN

	// Wraps of flowHot's 32-bit packet and mark counters.
	inWraps, outWraps [4]uint32
	marksWraps        uint32

	// Delivered bytes in the rate window before the current one.
	prevWin uint64

	// Queue Protection: packets it would have sanctioned in all, in the
	// window before the current one, the L-queue packets of that window;
	// the highest delay-weighted score of the sanctioned packets of the
	// current window and of the one before (score·qdelay/CRITICALqL, what
	// qprotect compares with CRITICALqLSCORE).
	qpSanctioned         uint64
	qpPrev, qpLPrev      uint32
	qpWorstWin, qpWorstP int64

	drops [aqm.NumReasons]uint64
}

// flowCounters is one direction's live flow table, the counters the owner
// keeps per flow (a reader gets them as a FlowTable, through a flowCopy).
// The hot entries come first: the table is one large allocation, which
// starts on a page, so each entry starts on a cache line.
type flowCounters struct {
	hot     [FlowTableSize + 1]flowHot // + otherFlow
	tags    [FlowTableSize]uint32
	cold    [FlowTableSize + 1]flowCold
	key     uint32 // keys the flow hash: chosen at random per hop
	evicted uint64 // flows that gave their place to a new one
	scorer  aqm.QProtScorer
	qpMinTh int64 // scorer.MinTh()
}

// reset empties the table, keeping its key; scorer is the Queue
// Protection in force for the direction's link.
func (t *flowCounters) reset(scorer aqm.QProtScorer) {
	t.tags = [FlowTableSize]uint32{}
	for i := range t.hot {
		// A write to every entry maps every page now, so that no page
		// fault falls on the owner's real-time thread at a new flow; a
		// key of no IP version matches no packet (lookup compares a home
		// entry's key without its tag).
		t.hot[i].inFlight = 0
		t.hot[i].key.version = 0
		t.cold[i].first = 0
	}
	t.hot[otherFlow] = flowHot{cls: noECN}
	t.cold[otherFlow] = flowCold{}
	t.evicted = 0
	t.setScorer(scorer)
}

// setScorer sets the Queue Protection flows are scored against.
func (t *flowCounters) setScorer(s aqm.QProtScorer) {
	t.scorer, t.qpMinTh = s, s.MinTh()
}

// lookup returns the index of pkt's flow, making an entry for a new one;
// hash is the packet's FlowHashKeyed(t.key), 0 for a malformed packet.
//
// Each flow has a home way in its first set, chosen by other bits of its
// hash, which a new flow takes when it is free. The home entry's key is
// compared first: its address depends on the hash alone, so the packet's
// one cache miss of the lookup is the line its counters are in too, where
// a scan of the set's tags first would wait for the tags' line before it
// could ask for the entry's. Only a flow away from home pays for the scan
// (a set's tags share one cache line).
func (t *flowCounters) lookup(pkt aqm.Header, hash uint32, now int64) int32 {
	if hash == 0 {
		return otherFlow // malformed: aqm hashes only IPv4 and IPv6 it can read
	}
	version := int(pkt[0] >> 4)
	h := hash | 1
	a, b, home := flowSetsOf(h)
	if t.hot[home].key.matches(pkt, version) {
		return int32(home)
	}
	if i := t.find(pkt, version, h, a); i >= 0 {
		return i
	}
	if b != a {
		if i := t.find(pkt, version, h, b); i >= 0 {
			return i
		}
	}
	return t.insert(pkt, version, h, a, b, home, now)
}

// find returns the entry of the set at base that holds pkt's flow, -1 if
// none does.
func (t *flowCounters) find(pkt aqm.Header, version int, h uint32, base int) int32 {
	tags := (*[flowWays]uint32)(t.tags[base : base+flowWays])
	for i, tg := range tags {
		if tg == h && t.hot[base+i].key.matches(pkt, version) {
			return int32(base + i)
		}
	}
	return -1
}

// insert makes an entry for a new flow whose sets start at a and b: in
// its home way if free, else in a free way of the set with more free
// ways (the two choices that keep the sets even), else in place of the
// flow of the two sets seen longest ago that has nothing in flight;
// otherFlow when every flow of both sets has a packet in flight.
func (t *flowCounters) insert(pkt aqm.Header, version int, h uint32, a, b, home int, now int64) int32 {
	victim := home
	if t.tags[home] != 0 {
		fa, na := t.free(a)
		fb, nb := t.free(b)
		switch {
		case na >= nb && na > 0:
			victim = fa
		case nb > 0:
			victim = fb
		default:
			victim = -1
			oldest := int64(1<<63 - 1)
			for _, base := range [2]int{a, b} {
				for i := base; i < base+flowWays; i++ {
					if e := &t.hot[i]; e.inFlight == 0 && e.last < oldest {
						victim, oldest = i, e.last
					}
				}
			}
		}
	}
	if victim < 0 {
		return otherFlow
	}
	if t.tags[victim] != 0 {
		t.evicted++
	}
	t.tags[victim] = h
	t.hot[victim] = flowHot{key: keyOf(pkt, version), cls: noECN}
	t.cold[victim] = flowCold{first: now}
	return int32(victim)
}

// free returns the first free entry of the set at base and how many are
// free.
func (t *flowCounters) free(base int) (first, n int) {
	first = -1
	for i := base + flowWays - 1; i >= base; i-- {
		if t.tags[i] == 0 {
			first = i
			n++
		}
	}
	return first, n
}

// arrive counts a packet read, with codepoint ecn, against flow i.
//
// The flow's class is the codepoint it sends; a switch between
// codepoints is a change, kept with its time (the first one only). CE
// says nothing of the sender's codepoint and is left out. For TCP a
// Not-ECT packet is no change: RFC 3168 §6.1.4-5 sends SYNs, pure ACKs
// and retransmissions Not-ECT in an ECN flow, so a TCP flow that starts
// Not-ECT and then sends ECT takes the ECT class.
func (t *flowCounters) arrive(i int32, ecn aqm.ECN, size int, now int64) {
	e := &t.hot[i]
	c := ecn & 3
	e.last = now
	e.inPk[c]++
	if e.inPk[c] == 0 {
		t.cold[i].inWraps[c]++
	}
	e.inB[c] += uint64(size)
	if ecn != aqm.CE && ecn != e.cls && !e.changed && i != otherFlow {
		t.classify(i, ecn, now)
	}
}

// classify takes a codepoint that is not flow i's class (see arrive): a
// call at a flow's first packets and at a change only, out of the way of
// the code every packet runs.
//
//go:noinline
func (t *flowCounters) classify(i int32, ecn aqm.ECN, now int64) {
	e := &t.hot[i]
	switch {
	case e.cls == noECN:
		e.cls = ecn
	case e.key.proto == 6 && ecn == aqm.NotECT:
	case e.key.proto == 6 && e.cls == aqm.NotECT:
		e.cls = ecn
	default:
		e.changed = true
		t.cold[i].changeTo, t.cold[i].changedAt = ecn, now
	}
}

// held counts a packet of flow i taken into the link: the entry stays
// until its fate.
func (t *flowCounters) held(i int32) { t.hot[i].inFlight++ }

// dropped counts a drop of one of flow i's packets.
func (t *flowCounters) dropped(i int32, r aqm.Reason) {
	t.cold[i].drops[r]++
}

// droppedHeld counts the drop of a packet of flow i that was held.
func (t *flowCounters) droppedHeld(i int32, r aqm.Reason) {
	t.hot[i].inFlight--
	t.cold[i].drops[r]++
}

// released counts a held packet of flow i that left the link and is to
// be written: its codepoint out, a mark, its sojourn, the rate window,
// and for the L-queue its Queue Protection score.
func (t *flowCounters) released(i int32, m *aqm.Meta, marked bool, ecnOut aqm.ECN, class aqm.Class, sojourn, at int64) {
	e := &t.hot[i]
	e.inFlight--
	size := uint64(m.Len)
	c := ecnOut & 3
	e.outPk[c]++
	if e.outPk[c] == 0 {
		t.cold[i].outWraps[c]++
	}
	e.outB[c] += size
	if marked {
		e.marks++
		if e.marks == 0 {
			t.cold[i].marksWraps++
		}
	}
	e.queue = class
	t.cold[i].sojourn.add(sojourn)
	if at-e.winStart >= flowWindow {
		t.turn(i, at)
	}
	e.winBytes += size
	if class == aqm.Classic {
		return
	}
	// Scored at the packet's arrival with the delay it met in the L-queue
	// (its sojourn), as qprotect scores it on enqueue; below MINTH it
	// scores nothing (a drained bucket restarts at the next scored packet
	// all the same).
	e.qpLWin++
	if sojourn <= t.qpMinTh {
		return
	}
	score, sanction := t.scorer.Score(&e.qpExp, sojourn, int(m.Len), m.Arrival)
	if sanction {
		t.sanctioned(i, score, sojourn)
	}
}

// turn starts flow i's rate window that holds at: the current window
// becomes the previous one, or both are empty when the flow released
// nothing for a whole window.
func (t *flowCounters) turn(i int32, at int64) {
	e, c := &t.hot[i], &t.cold[i]
	d := at - e.winStart
	c.prevWin, c.qpPrev, c.qpLPrev, c.qpWorstP = e.winBytes, e.qpWin, e.qpLWin, c.qpWorstWin
	if d >= 2*flowWindow {
		c.prevWin, c.qpPrev, c.qpLPrev, c.qpWorstP = 0, 0, 0, 0
	}
	e.winBytes, e.qpWin, e.qpLWin, c.qpWorstWin = 0, 0, 0, 0
	e.winStart = at - d%flowWindow
}

// sanctioned counts a packet of flow i that qprotect would have
// sanctioned, with the flow's score after it and the delay it met.
func (t *flowCounters) sanctioned(i int32, score, sojourn int64) {
	ql, _ := t.scorer.Thresholds()
	x := int64(float64(score) * float64(sojourn) / float64(ql))
	c := &t.cold[i]
	c.qpSanctioned++
	t.hot[i].qpWin++
	c.qpWorstWin = max(c.qpWorstWin, x)
}

// flowHist is a flow's sojourn histogram: one bucket below 2^10 ns, then
// four per power of two (19 % wide) up to 2^34 ns; small enough for
// thousands of flows, fine enough to tell 1 ms from 2.
type flowHist struct {
	counts [flowHistBuckets]uint32
}

const (
	flowHistMinExp  = 10
	flowHistOctaves = 24
	flowHistBuckets = 1 + flowHistOctaves*4
)

func flowHistIndex(v int64) int {
	if v < 1<<flowHistMinExp {
		return 0
	}
	e := bits.Len64(uint64(v)) - 1
	i := 1 + (e-flowHistMinExp)*4 + int(uint64(v)>>uint(e-2))&3
	return min(i, flowHistBuckets-1)
}

// flowHistUpper is the largest value of bucket i.
func flowHistUpper(i int) int64 {
	if i == 0 {
		return 1<<flowHistMinExp - 1
	}
	e := (i-1)/4 + flowHistMinExp
	sub := int64((i-1)%4) + 4
	return (sub+1)<<uint(e-2) - 1
}

// add counts one sojourn: one word written, no total kept (a second
// word, often on another cache line); readers sum the counts.
func (h *flowHist) add(ns int64) {
	h.counts[flowHistIndex(ns)]++
}

// total is how many sojourns were counted.
func (h *flowHist) total() uint64 {
	var n uint64
	for _, c := range h.counts {
		n += uint64(c)
	}
	return n
}

// quantile is the upper edge of the bucket holding the sample of nearest
// rank q (figure.Rank); 0 when empty.
func (h *flowHist) quantile(q float64) int64 {
	total := h.total()
	if total == 0 {
		return 0
	}
	rank := uint64(figure.Rank(int(total), q))
	var seen uint64
	for i, c := range h.counts {
		seen += uint64(c)
		if seen >= rank {
			return flowHistUpper(i)
		}
	}
	return flowHistUpper(flowHistBuckets - 1)
}
