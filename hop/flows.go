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
// it, a new flow takes the place of the flow of its set that has nothing
// in flight and was seen longest ago; when every flow of the set has a
// packet in flight the new one is counted as "other".
const FlowTableSize = 4096

// The table is set-associative: a flow's keyed hash picks a set of
// flowWays entries, so a lookup and an eviction look at flowWays entries
// at most, whatever the load.
const (
	flowWays = 8
	flowSets = FlowTableSize / flowWays
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
// of flow k.
func (k *flowKey) matches(v aqm.Header, version int) bool {
	le := binary.LittleEndian
	if version == 4 {
		return k.version == 4 && k.proto == v[9] && k.addrs[0] == le.Uint64(v[12:20]) && k.ports == portsWord(v, 4)
	}
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

// ECNCount is packets and bytes of one ECN codepoint.
type ECNCount struct {
	Packets uint64 `json:"packets"`
	Bytes   uint64 `json:"bytes"`
}

// flowEntry is one flow's counters, owner side. What every packet
// touches on arrival comes first.
type flowEntry struct {
	key      flowKey
	inFlight int32 // packets taken in and not yet fated: the entry must stay
	cls      aqm.ECN
	changed  bool // it switched codepoint: to changeTo at changedAt
	changeTo aqm.ECN
	queue    aqm.Class
	last     int64       // last arrival, hop clock
	in, out  [4]ECNCount // by codepoint, as read and as released
	marks    uint64      // CE set by the AQM

	// Delivered bytes in the current rate window (from winStart) and in
	// the one before.
	winStart          int64
	winBytes, prevWin uint64

	// Queue Protection's passive score (aqm.QProtScorer): the bucket's
	// expiry; packets it would have sanctioned, in all, in the current
	// window and in the one before; the L-queue packets of those windows;
	// the highest delay-weighted score of their sanctioned packets
	// (score·qdelay/CRITICALqL, what qprotect compares with
	// CRITICALqLSCORE).
	qpExp                int64
	qpSanctioned         uint64
	qpWin, qpPrev        uint32
	qpLWin, qpLPrev      uint32
	qpWorstWin, qpWorstP int64

	first     int64 // first arrival, hop clock
	changedAt int64
	drops     [aqm.NumReasons]uint64
	sojourn   flowHist
}

// flowTable is one direction's table.
type flowTable struct {
	key     uint32 // keys the flow hash: chosen at random per hop
	tags    [FlowTableSize]uint32
	e       [FlowTableSize + 1]flowEntry // + otherFlow
	evicted uint64                       // flows that gave their place to a new one
	scorer  aqm.QProtScorer
	qpMinTh int64 // scorer.MinTh()
}

// reset empties the table, keeping its key; scorer is the Queue
// Protection in force for the direction's link.
func (t *flowTable) reset(scorer aqm.QProtScorer) {
	t.tags = [FlowTableSize]uint32{}
	for i := range t.e {
		// A write to every entry maps every page now, so that no page
		// fault falls on the owner's real-time thread at a new flow.
		t.e[i].inFlight = 0
	}
	t.e[otherFlow] = flowEntry{cls: noECN}
	t.evicted = 0
	t.setScorer(scorer)
}

// setScorer sets the Queue Protection flows are scored against.
func (t *flowTable) setScorer(s aqm.QProtScorer) {
	t.scorer, t.qpMinTh = s, s.MinTh()
}

// lookup returns the index of pkt's flow, making an entry for a new one;
// hash is the packet's FlowHashKeyed(t.key), 0 for a malformed packet.
func (t *flowTable) lookup(pkt aqm.Header, hash uint32, now int64) int32 {
	if hash == 0 {
		return otherFlow // malformed: aqm hashes only IPv4 and IPv6 it can read
	}
	version := int(pkt[0] >> 4)
	h := hash | 1 // 0 is an empty way
	base := int(h>>1&(flowSets-1)) * flowWays
	tags := t.tags[base : base+flowWays : base+flowWays]
	for i, tg := range tags {
		if tg == h && t.e[base+i].key.matches(pkt, version) {
			return int32(base + i)
		}
	}
	victim, oldest := -1, int64(1<<63-1)
	for i, tg := range tags {
		if tg == 0 {
			victim = i
			break
		}
		if e := &t.e[base+i]; e.inFlight == 0 && e.last < oldest {
			victim, oldest = i, e.last
		}
	}
	if victim < 0 {
		return otherFlow
	}
	if tags[victim] != 0 {
		t.evicted++
	}
	tags[victim] = h
	e := &t.e[base+victim]
	*e = flowEntry{key: keyOf(pkt, version), first: now, cls: noECN}
	return int32(base + victim)
}

// arrive counts a packet read, with codepoint ecn, against flow i.
//
// The flow's class is the codepoint it sends; a switch between
// codepoints is a change, kept with its time (the first one only). CE
// says nothing of the sender's codepoint and is left out. For TCP a
// Not-ECT packet is no change: RFC 3168 §6.1.4-5 sends SYNs, pure ACKs
// and retransmissions Not-ECT in an ECN flow, so a TCP flow that starts
// Not-ECT and then sends ECT takes the ECT class.
func (t *flowTable) arrive(i int32, ecn aqm.ECN, size int, now int64) {
	e := &t.e[i]
	e.last = now
	e.in[ecn&3].Packets++
	e.in[ecn&3].Bytes += uint64(size)
	if ecn == aqm.CE || ecn == e.cls || e.changed || i == otherFlow {
		return
	}
	switch {
	case e.cls == noECN:
		e.cls = ecn
	case e.key.proto == 6 && ecn == aqm.NotECT:
	case e.key.proto == 6 && e.cls == aqm.NotECT:
		e.cls = ecn
	default:
		e.changed, e.changeTo, e.changedAt = true, ecn, now
	}
}

// dropped counts a drop of one of flow i's packets.
func (t *flowTable) dropped(i int32, r aqm.Reason) {
	t.e[i].drops[r]++
}

// released counts a packet of flow i that left the link and is to be
// written: its codepoint out, a mark, its sojourn, the rate window, and
// for the L-queue its Queue Protection score.
func (t *flowTable) released(i int32, m *aqm.Meta, marked bool, ecnOut aqm.ECN, class aqm.Class, sojourn, at int64) {
	e := &t.e[i]
	size := uint64(m.Len)
	e.out[ecnOut&3].Packets++
	e.out[ecnOut&3].Bytes += size
	if marked {
		e.marks++
	}
	e.queue = class
	e.sojourn.add(sojourn)
	if d := at - e.winStart; d >= flowWindow {
		e.prevWin, e.qpPrev, e.qpLPrev, e.qpWorstP = e.winBytes, e.qpWin, e.qpLWin, e.qpWorstWin
		if d >= 2*flowWindow {
			e.prevWin, e.qpPrev, e.qpLPrev, e.qpWorstP = 0, 0, 0, 0
		}
		e.winBytes, e.qpWin, e.qpLWin, e.qpWorstWin = 0, 0, 0, 0
		e.winStart = at - d%flowWindow
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
		ql, _ := t.scorer.Thresholds()
		x := int64(float64(score) * float64(sojourn) / float64(ql))
		e.qpSanctioned++
		e.qpWin++
		e.qpWorstWin = max(e.qpWorstWin, x)
	}
}

// flowHist is a flow's sojourn histogram: one bucket below 2^10 ns, then
// four per power of two (19 % wide) up to 2^34 ns; small enough for
// thousands of flows, fine enough to tell 1 ms from 2.
type flowHist struct {
	counts [flowHistBuckets]uint32
	total  uint32
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

func (h *flowHist) add(ns int64) {
	h.counts[flowHistIndex(ns)]++
	h.total++
}

// quantile is the upper edge of the bucket holding the sample of nearest
// rank q (figure.Rank); 0 when empty.
func (h *flowHist) quantile(q float64) int64 {
	if h.total == 0 {
		return 0
	}
	rank := uint32(figure.Rank(int(h.total), q))
	var seen uint32
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			return flowHistUpper(i)
		}
	}
	return flowHistUpper(flowHistBuckets - 1)
}
