package rtt

// flowKey is a flow as the hop sees it from the client: the client's
// address (the source of packets going up) in addrs[0:2], the server's in
// addrs[2:4] (IPv4 addresses take the first word of each), the client's
// port in the high half of ports and the server's in the low half (an
// ICMP echo's identifier in both).
type flowKey struct {
	addrs   [4]uint64
	ports   uint32
	proto   uint8
	version uint8
}

// is reports whether k and o are the same flow, word by word (a struct
// comparison calls the runtime's memory comparison).
func (k *flowKey) is(o *flowKey) bool {
	return k.addrs[0] == o.addrs[0] && k.addrs[2] == o.addrs[2] && k.ports == o.ports &&
		k.proto == o.proto && k.version == o.version && k.addrs[1] == o.addrs[1] && k.addrs[3] == o.addrs[3]
}

// Method is how a flow's round trips are timed.
type Method uint8

const (
	MethodNone          Method = iota // not known yet
	MethodTCPTimestamps               // TSval and its echo in TSecr
	MethodTCPSeq                      // sequence number and the ACK that covers it
	MethodQUICSpin                    // QUIC spin bit edges
	MethodICMPEcho                    // ICMP or ICMPv6 echo request and reply
	MethodProbe                       // pi2hop probe request and reply
	MethodPrague                      // udp_prague DATA and its ACK
)

var methodNames = [...]string{"none", "tcp-timestamps", "tcp-seq", "quic-spin", "icmp-echo", "probe", "prague"}

func (m Method) String() string {
	if int(m) < len(methodNames) {
		return methodNames[m]
	}
	return "unknown"
}

// MarshalText gives the method's name.
func (m Method) MarshalText() ([]byte, error) { return []byte(m.String()), nil }

// Status says whether a flow has samples, and if not, why.
type Status uint8

const (
	StatusWaiting  Status = iota // no sample yet
	StatusMeasured               // at least one sample
	StatusNoSpin                 // QUIC whose endpoints do not spin: encrypted, nothing to time
)

var statusNames = [...]string{"waiting", "measured", "no RTT: encrypted, no spin bit"}

func (s Status) String() string {
	if int(s) < len(statusNames) {
		return statusNames[s]
	}
	return "unknown"
}

// MarshalText gives the status as people read it.
func (s Status) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// sender is what the table keeps of one endpoint's packets (one
// direction): its ring of outstanding packets and where its sequence
// space stands.
type sender struct {
	head, n  uint32 // ring of outstanding packets: first slot, how many
	skip     uint32 // new packets not to remember before the next one
	stride   uint8  // one new packet in 2^stride is remembered
	lastTS   uint32 // the last TSval remembered
	lastEcr  uint32 // the last TSecr looked up
	sndNxt   uint32 // the end of the highest data sent
	retxLow  uint32 // retransmitted data not yet acknowledged: from
	retxHigh uint32 // to
	hasTS    bool
	hasEcr   bool
	hasSeq   bool
	retx     bool
}

// flow is one flow's state apart from its histograms' buckets and its
// rings, what a TCP packet reads first.
type flow struct {
	key      flowKey
	lastSeen int64
	method   Method
	quic     bool // a QUIC long header was seen
	snd      [2]sender
	samples  [2]uint64 // by half (client, server)
	max      [2]int64  // the largest sample of each half
	dropped  uint64    // outstanding packets dropped for newer ones
	karn     uint64    // answers not taken because they covered retransmitted data
	spin     spinState
}

// slot is one packet waiting for its answer: its key (TSval, end
// sequence number, echo sequence number) and when it crossed the hop,
// side by side so that a lookup reads one cache line.
type slot struct {
	at  int64
	key uint32
}

// ring returns the first index of flow i's ring for direction d.
func (t *Table) ring(i int, d Dir) uint32 { return (uint32(i)*2 + uint32(d)) * t.out }

// push remembers a packet of flow i going d, with key k, at now, or
// every 2^stride-th of them. When the ring is full, every other packet in
// it is dropped and counted, the oldest kept, and from then on only every
// other new one is remembered (the stride doubles; it halves again when
// the ring drains to a quarter): answers come oldest first, so the ring
// then spans every packet in flight evenly, more thinly. Dropping the
// oldest alone would lose every sample of a flow with more packets in
// flight than the ring holds (120 TSvals of a 1 ms clock over a 120 ms
// round trip), since each would go before its answer came.
func (t *Table) push(i int, d Dir, k uint32, now int64) {
	s, base, mask := &t.flows[i].snd[d], t.ring(i, d), t.out-1
	if s.skip > 0 {
		s.skip--
		return
	}
	if s.n == t.out {
		for j := uint32(1); j < s.n/2; j++ {
			t.slots[base+(s.head+j)&mask] = t.slots[base+(s.head+2*j)&mask]
		}
		drop := uint64(s.n - s.n/2)
		s.n /= 2
		t.flows[i].dropped += drop
		t.st.Dropped += drop
		s.stride = min(s.stride+1, maxStride)
	}
	t.slots[base+(s.head+s.n)&mask] = slot{at: now, key: k}
	s.n++
	s.skip = 1<<s.stride - 1
}

// maxStride bounds the thinning: one packet in 2^maxStride remembered.
const maxStride = 16

// popped takes one packet off the head of a ring, and remembers more
// packets again once the ring has drained to a quarter.
func (t *Table) popped(s *sender) {
	s.head = (s.head + 1) & (t.out - 1)
	s.n--
	if s.stride > 0 && s.n <= t.out/4 {
		s.stride--
	}
}

// popExact finds the key k among flow i's packets that went d, oldest
// first: packets before it (in serial order) will never be answered
// and go; k itself is taken. The keys of one sender grow (TSval,
// sequence numbers), so the scan stops at the first younger key.
func (t *Table) popExact(i int, d Dir, k uint32) (at int64, ok bool) {
	s, base := &t.flows[i].snd[d], t.ring(i, d)
	for s.n > 0 {
		j := base + s.head
		key := t.slots[j].key
		if int32(key-k) > 0 {
			return 0, false
		}
		t.popped(s)
		if key == k {
			return t.slots[j].at, true
		}
	}
	return 0, false
}

// popCovered takes every packet of flow i that went d whose key is at or
// below k (a cumulative ACK) and returns the time of the one whose key is
// k: the segment whose arrival the ACK answers. An ACK that ends between
// remembered segments times none, as the segment it answers was sent
// later than any of them.
func (t *Table) popCovered(i int, d Dir, k uint32) (at int64, ok bool) {
	s, base := &t.flows[i].snd[d], t.ring(i, d)
	for s.n > 0 {
		j := base + s.head
		key := t.slots[j].key
		if int32(key-k) > 0 {
			break
		}
		at, ok = t.slots[j].at, key == k
		t.popped(s)
	}
	return at, ok
}

// sample records one sample of flow i, answered going d at now.
func (t *Table) sample(i int, d Dir, sent, now int64) {
	ns, h, f := max(now-sent, 0), answering(d), &t.flows[i]
	t.counts[i][h][histIndex(ns)]++
	f.samples[h]++
	f.max[h] = max(f.max[h], ns)
	t.st.Samples++
	if t.onSample != nil {
		t.onSample(h, ns)
	}
}
