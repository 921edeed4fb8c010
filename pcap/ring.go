package pcap

import (
	"sync/atomic"
	"unsafe"
)

// record is one captured packet waiting for the writer. Its data slice
// points into the ring's slab and is reused once the writer is done.
type record struct {
	// seq is the handshake between producers and the writer (a bounded
	// queue after D. Vyukov's): seq == pos means free for the producer
	// that claims position pos; seq == pos+1 means filled and ready for
	// the writer; the writer sets pos+size to free it for the next lap.
	seq     atomic.Uint64
	at      int64 // ns since the Unix epoch
	iface   int32
	origLen int32
	capLen  int32
	hasAnn  bool
	ann     Annotation
	data    []byte // snaplen bytes of the slab
}

// closedBit in tail stops producers: once set, no position is claimed any
// more, so the writer knows exactly how many records are still to come.
const closedBit = 1 << 63

// ring is a bounded multi-producer, single-consumer queue of records with
// all memory allocated up front. Producers never block and never take a
// lock: a full ring refuses the record.
type ring struct {
	recs []record
	mask uint64
	_    [56]byte // keep tail off the cache line of the slice header
	tail atomic.Uint64
	_    [56]byte
	head uint64 // the writer's next position; only the writer touches it
}

// recordBytes is the memory one ring slot takes: its record and its
// snaplen bytes of slab.
func recordBytes(snaplen int) int64 { return int64(unsafe.Sizeof(record{})) + int64(snaplen) }

// ringSlots is the ring's size: records rounded up to a power of two,
// then halved until the slots fit in maxBytes; 0 when not even one does.
func ringSlots(records int, maxBytes int64, snaplen int) int {
	size := 1
	for size < records {
		size <<= 1
	}
	for size > 0 && int64(size)*recordBytes(snaplen) > maxBytes {
		size >>= 1
	}
	return size
}

// newRing makes a ring of size records (a power of two) of snaplen
// bytes each.
func newRing(size, snaplen int) *ring {
	r := &ring{recs: make([]record, size), mask: uint64(size - 1)}
	slab := make([]byte, size*snaplen)
	for i := range r.recs {
		r.recs[i].seq.Store(uint64(i))
		r.recs[i].data = slab[i*snaplen : (i+1)*snaplen : (i+1)*snaplen]
	}
	return r
}

// claim reserves the next free record. ok is false when the ring is full
// or closed.
func (r *ring) claim() (rec *record, pos uint64, ok bool) {
	for {
		t := r.tail.Load()
		if t&closedBit != 0 {
			return nil, 0, false
		}
		rec = &r.recs[t&r.mask]
		seq := rec.seq.Load()
		switch {
		case seq == t:
			if r.tail.CompareAndSwap(t, t+1) {
				return rec, t, true
			}
		case seq < t:
			return nil, 0, false // the writer has not freed this lap yet: full
		}
		// Another producer moved tail on: retry with the new value.
	}
}

// publish hands a claimed record to the writer.
func (r *ring) publish(rec *record, pos uint64) { rec.seq.Store(pos + 1) }

// close stops further claims and returns the final tail.
func (r *ring) close() uint64 {
	for {
		t := r.tail.Load()
		if t&closedBit != 0 || r.tail.CompareAndSwap(t, t|closedBit) {
			return t &^ closedBit
		}
	}
}

// peek returns the next record if it has been published.
func (r *ring) peek() (*record, bool) {
	rec := &r.recs[r.head&r.mask]
	return rec, rec.seq.Load() == r.head+1
}

// claimed reports whether position head has been claimed by a producer
// (it may not be published yet).
func (r *ring) claimed() bool { return r.head < r.tail.Load()&^closedBit }

// release frees the record returned by peek for the next lap.
func (r *ring) release(rec *record) {
	rec.seq.Store(r.head + uint64(len(r.recs)))
	r.head++
}
