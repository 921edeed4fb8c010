package rtt

import (
	"fmt"
	"math/bits"
	"math/rand/v2"
	"unsafe"
)

// Dir is the way a packet crosses the hop.
type Dir uint8

const (
	Up   Dir = iota // toward the server: the client's packets
	Down            // toward the client: the server's packets
)

// Half is one half of a round trip through the hop.
type Half uint8

const (
	ClientHalf Half = iota // hop → client → hop
	ServerHalf             // hop → server → hop
)

// answering is the half a sample belongs to when its answer crosses the
// hop in direction d: an answer going up comes from the client, so it
// closes the client half.
func answering(d Dir) Half { return Half(d) }

// Config sizes a Table. Its memory is fixed by these two figures.
type Config struct {
	// Flows is how many flows the table holds, rounded up to a power of
	// two (at least 16). Beyond it a new flow takes the place of the
	// least recently seen of the flows it could go to (Stats.Evicted).
	Flows int
	// Outstanding is how many packets, per flow and direction, wait for
	// their answer, rounded up to a power of two (at least 2). When
	// another arrives every other one is dropped, the oldest kept
	// (Stats.Dropped; see push).
	Outstanding int
}

// DefaultConfig holds the 1024 flows seen most recently (14 KB a flow,
// 12 KB of it the two halves' histograms). With 64
// packets waiting each way, a TCP flow whose TSval ticks every
// millisecond has each TSval timed over a round trip of up to 64 ms, and
// a longer round trip (or more segments in flight, without timestamps)
// is timed more thinly.
var DefaultConfig = Config{Flows: 1024, Outstanding: 64}

// Limits of Config.
const (
	MaxFlows       = 1 << 20
	MaxOutstanding = 1 << 12
)

// Validate checks c's sizes.
func (c Config) Validate() error {
	if c.Flows < 1 || c.Flows > MaxFlows {
		return fmt.Errorf("rtt: %d flows: want 1 to %d", c.Flows, MaxFlows)
	}
	if c.Outstanding < 1 || c.Outstanding > MaxOutstanding {
		return fmt.Errorf("rtt: %d outstanding packets a flow: want 1 to %d", c.Outstanding, MaxOutstanding)
	}
	return nil
}

func pow2(n, least int) int {
	n = max(n, least)
	return 1 << bits.Len(uint(n-1))
}

// Stats are the table's counters.
type Stats struct {
	Packets   uint64 `json:"packets"`   // packets seen
	Malformed uint64 `json:"malformed"` // not a well-formed IP packet, or a cut transport header
	Untimed   uint64 `json:"untimed"`   // of a protocol the table cannot time (no flow kept)
	Samples   uint64 `json:"samples"`   // samples taken, both halves
	Dropped   uint64 `json:"dropped"`   // outstanding packets dropped to make room (every other one of a full ring)
	Evicted   uint64 `json:"evicted"`   // flows that gave their place to a newer one
}

// Ways and sets: a flow's keyed hash picks two sets of flowWays entries
// and the flow lives in either, so a lookup reads 2·flowWays tags at most
// and a full table evicts the least recently seen of them.
const flowWays = 8

// Table measures the RTT of a fixed number of flows. Its methods other
// than CopyTo's reader side are for its owner goroutine only.
type Table struct {
	sets    uint32 // number of sets, a power of two
	out     uint32 // outstanding packets per flow and direction, a power of two
	hashKey [2]uint64
	tags    []uint32 // h|1 of the flow in each entry, 0 when empty
	flows   []flow
	counts  [][2]histCounts // by entry: the halves' histograms (client, server)
	slots   []slot          // outstanding packets: entry·2·out + dir·out + ring position
	st      Stats
	last    int // the entry last looked up
	// onSample, when set (tests), sees every sample.
	onSample func(h Half, ns int64)
}

// NewTable allocates a table of c's size (see Config.Validate).
func NewTable(c Config) (*Table, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	n := pow2(c.Flows, 2*flowWays)
	out := pow2(c.Outstanding, 2)
	t := &Table{
		sets:    uint32(n / flowWays),
		out:     uint32(out),
		hashKey: [2]uint64{rand.Uint64() | 1, rand.Uint64()},
		tags:    make([]uint32, n),
		flows:   make([]flow, n),
		counts:  make([][2]histCounts, n),
		slots:   make([]slot, n*2*out),
	}
	return t, nil
}

// Bytes is the memory the table's arrays hold: all it will ever use,
// allocated by NewTable.
func (t *Table) Bytes() int {
	return len(t.tags)*int(unsafe.Sizeof(t.tags[0])) + len(t.flows)*int(unsafe.Sizeof(t.flows[0])) +
		len(t.counts)*int(unsafe.Sizeof(t.counts[0])) + len(t.slots)*int(unsafe.Sizeof(t.slots[0]))
}

// Capacity is how many flows the table holds.
func (t *Table) Capacity() int { return len(t.flows) }

// Stats returns the table's counters.
func (t *Table) Stats() Stats { return t.st }

// Reset forgets every flow and counter, keeping the memory.
func (t *Table) Reset() {
	clear(t.tags)
	clear(t.flows)
	clear(t.counts)
	t.st = Stats{}
}

// hash mixes the flow key with the table's random key, so that which
// flows share a set cannot be chosen from outside.
func (t *Table) hash(k *flowKey) uint32 {
	m := t.hashKey[0]
	x := (k.addrs[0]<<32 | k.addrs[2]) ^ t.hashKey[1] // IPv4: both addresses
	if k.version == 6 {
		x = ((k.addrs[0] ^ x) * m) ^ k.addrs[1]
		x = ((x ^ x>>29) * m) ^ k.addrs[2]
		x = ((x ^ x>>29) * m) ^ k.addrs[3]
	}
	x *= m
	x = (x ^ x>>29 ^ uint64(k.ports)<<8 ^ uint64(k.proto)) * m
	return uint32(x ^ x>>32)
}

// setsOf returns the first entries of the two sets flow hash h may live in.
func (t *Table) setsOf(h uint32) (a, b int) {
	mask := t.sets - 1
	return int(h>>1&mask) * flowWays, int((h>>17|h<<15)&mask) * flowWays
}

// find returns the entry of flow k, or -1.
func (t *Table) find(k *flowKey) int {
	h := t.hash(k) | 1
	a, b := t.setsOf(h)
	for _, base := range [2]int{a, b} {
		for i := base; i < base+flowWays; i++ {
			if t.tags[i] == h && t.flows[i].key.is(k) {
				return i
			}
		}
	}
	return -1
}

// lookup returns the entry of flow k, taking one (the free one, or the
// least recently seen) for a new flow.
func (t *Table) lookup(k *flowKey, now int64) int {
	if i := t.last; t.tags[i] != 0 && t.flows[i].key.is(k) {
		return i // a burst of one flow, or its answer
	}
	h := t.hash(k) | 1
	a, b := t.setsOf(h)
	for _, base := range [2]int{a, b} {
		for i := base; i < base+flowWays; i++ {
			if t.tags[i] == h && t.flows[i].key.is(k) {
				t.last = i
				return i
			}
		}
	}
	victim := -1
	for _, base := range [2]int{a, b} {
		for i := base; i < base+flowWays; i++ {
			if t.tags[i] == 0 {
				victim = i
				break
			}
			if victim < 0 || t.flows[i].lastSeen < t.flows[victim].lastSeen {
				victim = i
			}
		}
		if victim >= 0 && t.tags[victim] == 0 {
			break
		}
	}
	if t.tags[victim] != 0 {
		t.st.Evicted++
	}
	if f := &t.flows[victim]; f.samples[0]+f.samples[1] > 0 {
		t.counts[victim] = [2]histCounts{} // a flow without samples left its buckets empty
	}
	t.tags[victim] = h
	t.flows[victim] = flow{key: *k, lastSeen: now}
	t.last = victim
	return victim
}
