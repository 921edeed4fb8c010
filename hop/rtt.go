package hop

// Passive round-trip times (package rtt) at the hop. The table watches
// the hop's client-facing edge: an up packet as it arrives from the
// client, a down packet as it leaves for it. So the client half of a
// round trip is the client's own (its link and stack) and the server
// half everything beyond that edge, the hop's queues and delay lines
// included: a client's ping is timed whole, as ping times it, and a
// flow's two halves add up to its round trip.
//
// One rtt.Table sees both directions, and it is the down owner's alone:
// the up owner reads what the table needs of each of its packets
// (rtt.Record) and hands it over a fixed ring that takes no lock; the
// down owner drains the ring before it shows the table a packet of its
// own, taking only records no later than that packet, so that the table
// sees the packets in time order. The one exception: the up owner reads the
// clock before it hands a record over, so a record handed over after the
// down owner took a later packet is seen late, at its own time (the gap
// is the up owner's time from its clock to the handover, far below any
// round trip). The down owner drains at each pass of its loop too, and
// the up owner wakes it when the ring passes half full, so an idle down
// direction does not let the ring fill.

import (
	"fmt"
	"net/netip"
	"sync/atomic"

	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/rtt"
	"github.com/pi2hop/pi2hop/shaper"
)

// rttRingSize is how many up packets wait for the down owner: a drain
// at least every stats interval (and on a wake-up at half of it) leaves
// room for bursts of the up owner's batches between two of its passes.
const rttRingSize = 4096

// rttItem is one up packet on its way to the table: what the table
// needs of it, and when it arrived.
type rttItem struct {
	rec rtt.Record
	at  int64
}

// rttRing is a single-producer single-consumer ring of rttItems: the
// producer writes an item then publishes it by moving tail; the consumer
// reads items then frees them by moving head. Each side writes only its
// own index, and keeps the other's as it last read it, reading it again
// only when that says the ring is full (producer) or empty (consumer),
// so the line the other side writes is seldom pulled over. Neither takes
// a lock or waits; a full ring refuses the item (counted in drops),
// never blocks the producer.
type rttRing struct {
	items [rttRingSize]rttItem
	_     [64]byte
	// The producer's.
	tail  atomic.Uint64 // next to write
	drops atomic.Uint64 // items refused by a full ring
	head0 uint64        // head as the producer last read it
	_     [64]byte
	// The consumer's.
	head  atomic.Uint64 // next to read
	tail0 uint64        // tail as the consumer last read it
}

// slot returns the item the producer fills next, or nil when the ring is
// full (counted).
func (r *rttRing) slot() *rttItem {
	t := r.tail.Load()
	if t-r.head0 >= rttRingSize {
		if r.head0 = r.head.Load(); t-r.head0 >= rttRingSize {
			r.drops.Add(1)
			return nil
		}
	}
	return &r.items[t&(rttRingSize-1)]
}

// publish makes the item slot returned visible to the consumer, and
// reports whether it made the ring half full: the consumer should drain
// it. Each item adds one, so the ring passes half full at a publish; the
// producer reads head again whenever its own view says half full or
// more, which it does only while the consumer is that far behind.
func (r *rttRing) publish() (half bool) {
	t := r.tail.Load() + 1
	r.tail.Store(t)
	if t-r.head0 < rttRingSize/2 {
		return false
	}
	r.head0 = r.head.Load()
	return t-r.head0 == rttRingSize/2
}

// drain passes each waiting item that arrived at or before now to take,
// oldest first, and frees them.
func (r *rttRing) drain(now int64, take func(*rttItem)) {
	h := r.head.Load()
	if h == r.tail0 {
		if r.tail0 = r.tail.Load(); h == r.tail0 {
			return
		}
	}
	start := h
	for ; h != r.tail0; h++ {
		it := &r.items[h&(rttRingSize-1)]
		if it.at > now {
			break
		}
		take(it)
	}
	if h != start {
		r.head.Store(h)
	}
}

// rttUpObserver hands the up owner's arrivals to the down owner's table.
type rttUpObserver struct {
	quietObserver
	ring *rttRing
	wake *waker // the down owner's
}

func (u *rttUpObserver) points() points { return atArrive }

// arrive passes on a packet the queue took: one it refused, or had no
// buffer for, does not cross the hop, so no answer to it comes back.
func (u *rttUpObserver) arrive(slot int32, pkt []byte, _ *aqm.Meta, _ uint32, refused *shaper.Event, now int64) {
	if slot < 0 || refused != nil {
		return
	}
	it := u.ring.slot()
	if it == nil {
		return
	}
	it.rec.Parse(pkt, len(pkt), rtt.Up)
	it.at = now
	if u.ring.publish() {
		u.wake.signal() // an idle down owner drains it
	}
}

// rttTable is the down owner's table and the ring from the up owner.
type rttTable struct {
	quietObserver
	t    *rtt.Table
	ring *rttRing
	rec  rtt.Record // a field: a local's address would escape through Observe
	// observe is observeItem, as the ring's drain takes it.
	observe func(*rttItem)
}

// newRTT makes the hop's table and the observers of its two owners.
func newRTT(down *waker) (*rttTable, *rttUpObserver, error) {
	t, err := rtt.NewTable(rtt.DefaultConfig)
	if err != nil {
		return nil, nil, err
	}
	t.Reset() // a write to every page maps it now, not on the owner's real-time thread
	r := new(rttRing)
	for i := range r.items {
		r.items[i].at = 1 // and the ring's pages too
	}
	d := &rttTable{t: t, ring: r}
	d.observe = d.observeItem
	return d, &rttUpObserver{ring: r, wake: down}, nil
}

func (d *rttTable) points() points { return atDepart }

// depart shows the table the up packets that arrived before this one
// left, then this one: a down packet written to the client's side (one
// the device refused never reaches the client, so nothing answers it).
// It left at ev.At, the link's time for it, as the capture's out tap
// stamps it: the owner's own lateness in writing it is the hop's
// processing, not the path's.
func (d *rttTable) depart(_ int32, pkt []byte, ev *shaper.Event, ok bool, now int64) {
	if !ok {
		return
	}
	if ev != nil {
		now = ev.At
	}
	d.drain(now)
	d.rec.Parse(pkt, len(pkt), rtt.Down)
	d.t.Observe(&d.rec, now)
}

// drain shows the table the up packets that arrived at or before now.
func (d *rttTable) drain(now int64) { d.ring.drain(now, d.observe) }

// observe shows the table one up packet; made once, so that drain's
// argument is no new closure.
func (d *rttTable) observeItem(it *rttItem) { d.t.Observe(&it.rec, it.at) }

// stats are the table's counters, with the up packets the ring refused
// counted as dropped.
func (d *rttTable) stats() rtt.Stats {
	s := d.t.Stats()
	s.Dropped += d.ring.drops.Load()
	return s
}

// FlowRTT is a flow's passive round-trip times (package rtt): the client
// half (hop → client → hop), the server half (hop → server → hop) and
// their sum, the round trip through the hop (rtt.Halves).
type FlowRTT struct {
	Method     string      `json:"method"` // tcp-timestamps, tcp-seq, quic-spin, icmp-echo, probe, prague
	Status     string      `json:"status"` // as rtt.Status says it: no sample yet, measured, no spin bit
	ClientHalf rtt.Figures `json:"client_half"`
	ServerHalf rtt.Figures `json:"server_half"`
	Sum        rtt.Figures `json:"sum"`
}

// Text is the flow's round trip as the flow tables show it: p50 and p99
// of the sum of the halves (the round trip through the hop); with only
// one half timed (a ping from the client times the server half alone),
// that half, named; "no spin" for QUIC whose endpoints do not spin; "-"
// with nothing timed, or no RTT at all (nil).
func (r *FlowRTT) Text() string {
	switch {
	case r == nil:
		return "-"
	case r.Sum.N > 0:
		return fmt.Sprintf("%.1f/%.1fms", r.Sum.P50Ms, r.Sum.P99Ms)
	case r.ServerHalf.N > 0:
		return fmt.Sprintf("server %.1f/%.1fms", r.ServerHalf.P50Ms, r.ServerHalf.P99Ms)
	case r.ClientHalf.N > 0:
		return fmt.Sprintf("client %.1f/%.1fms", r.ClientHalf.P50Ms, r.ClientHalf.P99Ms)
	case r.Status == rtt.StatusNoSpin.String():
		return "no spin"
	}
	return "-"
}

// P50Ms is the median the flow tables sort by: Text's, or false with
// none.
func (r *FlowRTT) P50Ms() (float64, bool) {
	switch {
	case r == nil:
		return 0, false
	case r.Sum.N > 0:
		return r.Sum.P50Ms, true
	case r.ServerHalf.N > 0:
		return r.ServerHalf.P50Ms, true
	case r.ClientHalf.N > 0:
		return r.ClientHalf.P50Ms, true
	}
	return 0, false
}

// rttKey is how the flow tables and the RTT table meet: the protocol and
// the client's and server's address and port. The flow table keeps no
// port for ICMP, where the RTT table keeps the echo identifier, so an
// ICMP key has none: the flow table's ICMP flow between two hosts is
// every echo identifier between them.
type rttKey struct {
	proto          uint8
	client, server netip.AddrPort
}

func rttKeyOf(proto uint8, client, server netip.AddrPort) rttKey {
	if proto == 1 || proto == 58 {
		client, server = netip.AddrPortFrom(client.Addr(), 0), netip.AddrPortFrom(server.Addr(), 0)
	}
	return rttKey{proto, client, server}
}

// rttJoin is a reader's view of the RTT table's copy: its counters, its
// flows by key for the flow tables (when index is set), and copies of
// the flows keep keeps with their histograms (when keep is set).
type rttJoin struct {
	ok    bool
	stats rtt.Stats
	index map[rttKey]*rttJoined
	keep  func(*rtt.Flow) bool
	kept  []rtt.Flow
}

// rttJoined is what the RTT table knows of one key: more than one of its
// flows for ICMP (one per echo identifier), their histograms added up.
type rttJoined struct {
	method rtt.Method
	status rtt.Status
	hists  [2]rtt.Hist
}

// fill reads a copy of the table: on the reader, under the handover.
func (j *rttJoin) fill(s *rtt.Snapshot, st rtt.Stats) {
	j.ok, j.stats = true, st
	fs := s.Flows()
	if j.index != nil {
		for i := range fs {
			j.add(&fs[i])
		}
	}
	if j.keep != nil {
		hists := make([][2]rtt.Hist, 0, len(fs))
		for i := range fs {
			if f := &fs[i]; j.keep(f) {
				hists = append(hists, *f.Hists)
				f.Hists = &hists[len(hists)-1]
				j.kept = append(j.kept, *f)
			}
		}
	}
}

// add joins one flow of the RTT table to its key's.
func (j *rttJoin) add(f *rtt.Flow) {
	k := rttKeyOf(f.Proto, f.Client, f.Server)
	e := j.index[k]
	if e == nil {
		e = &rttJoined{method: f.Method, status: f.Status}
		j.index[k] = e
	}
	if statusRank(f.Status) > statusRank(e.status) {
		e.method, e.status = f.Method, f.Status
	}
	for h := range e.hists {
		addHist(&e.hists[h], &f.Hists[h])
	}
}

// statusRank orders the statuses of flows joined under one key: one
// measured says the key is, else one that does not spin says so.
func statusRank(s rtt.Status) int {
	switch s {
	case rtt.StatusMeasured:
		return 2
	case rtt.StatusNoSpin:
		return 1
	}
	return 0
}

// addrPorts returns the key's source and destination (invalid for a key
// of no IP version).
func (k *flowKey) addrPorts() (src, dst netip.AddrPort) {
	var a, b netip.Addr
	raw := k.bytes()
	switch k.version {
	case 4:
		a, b = netip.AddrFrom4([4]byte(raw[:4])), netip.AddrFrom4([4]byte(raw[4:8]))
	case 6:
		a, b = netip.AddrFrom16([16]byte(raw[:16])), netip.AddrFrom16([16]byte(raw[16:]))
	default:
		return
	}
	return netip.AddrPortFrom(a, uint16(k.ports>>16)), netip.AddrPortFrom(b, uint16(k.ports))
}

// addHist adds b's samples to a.
func addHist(a, b *rtt.Hist) {
	a.N += b.N
	a.Max = max(a.Max, b.Max)
	for i, n := range b.Counts {
		a.Counts[i] += n
	}
}

// flowRTT returns the RTT of the flow table's flow k of direction d, nil
// when the RTT table has no flow of its key.
func (j *rttJoin) flowRTT(d Dir, k *flowKey) *FlowRTT {
	if j == nil || j.index == nil {
		return nil
	}
	src, dst := k.addrPorts()
	if !src.IsValid() {
		return nil
	}
	if d == Down {
		src, dst = dst, src
	}
	e := j.index[rttKeyOf(k.proto, src, dst)]
	if e == nil {
		return nil
	}
	r := &FlowRTT{Method: e.method.String(), Status: e.status.String()}
	r.ClientHalf, r.ServerHalf, r.Sum = rtt.Halves(&e.hists)
	return r
}

// RTTFlows returns the flows of the hop's RTT table that keep keeps (nil:
// all), most recently seen first, each with its histograms copied into
// memory the caller owns (Flow.Hists); nil with Config.NoRTT. The down
// owner copies its table for it, as for StatsFlows: poll it at the pace a
// person reads.
func (h *Hop) RTTFlows(keep func(*rtt.Flow) bool) []rtt.Flow {
	if keep == nil {
		keep = func(*rtt.Flow) bool { return true }
	}
	j := &rttJoin{keep: keep}
	h.mu.Lock()
	running := h.running
	h.mu.Unlock()
	h.dirs[Down].snapshotFlows(running, false, 0, j)
	return j.kept
}
