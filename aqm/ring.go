package aqm

// maxPrealloc bounds how many entries a ring allocates up front (1.5 MiB of
// Meta). A queue whose limit is larger starts at this size and doubles when
// it first fills, so even a limit of 2^32-1 packets costs memory only as the
// backlog really grows; with the default limit (10000) nothing is ever
// allocated after construction.
const maxPrealloc = 1 << 16

// ring is a FIFO of packet metadata in a circular buffer whose size is a
// power of two. It is the one queue implementation behind the FIFO and both
// DualPI2 queues, and it keeps the byte count of what it holds. The zero
// ring is empty and grows on first push.
type ring struct {
	buf   []Meta
	head  int // index of the oldest entry
	n     int // entries held
	bytes int // sum of Len over the entries held
}

// newRing returns a ring able to hold want entries (at most maxPrealloc)
// without allocating.
func newRing(want int) ring {
	var r ring
	r.reserve(want)
	return r
}

// reserve makes room for want entries (capped at maxPrealloc). It is called
// at construction and on a configuration change, not per packet.
func (r *ring) reserve(want int) {
	want = min(want, maxPrealloc)
	if want > len(r.buf) {
		r.resize(want)
	}
}

// resize moves the entries into a buffer of at least want slots.
func (r *ring) resize(want int) {
	size := 1
	for size < want {
		size <<= 1
	}
	buf := make([]Meta, size)
	for i := range r.n {
		buf[i] = r.buf[(r.head+i)&(len(r.buf)-1)]
	}
	r.buf, r.head = buf, 0
}

func (r *ring) len() int { return r.n }

// push appends m. It allocates only when the ring is full (doubling), which
// the queue limits make rare: see maxPrealloc.
func (r *ring) push(m Meta) {
	if r.n == len(r.buf) {
		r.resize(max(2*len(r.buf), 16))
	}
	r.buf[(r.head+r.n)&(len(r.buf)-1)] = m
	r.n++
	r.bytes += int(m.Len)
}

// front returns the oldest entry; the ring must not be empty.
func (r *ring) front() *Meta { return &r.buf[r.head] }

// pop removes and returns the oldest entry; the ring must not be empty.
func (r *ring) pop() Meta {
	m := r.buf[r.head]
	r.buf[r.head] = Meta{}
	r.head = (r.head + 1) & (len(r.buf) - 1)
	r.n--
	r.bytes -= int(m.Len)
	return m
}

// clear empties the ring, keeping its buffer.
func (r *ring) clear() {
	for r.n > 0 {
		r.pop()
	}
	r.head = 0
}
