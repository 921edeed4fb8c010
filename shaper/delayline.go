package shaper

// delayLine is the FIFO of packets that have left the link and wait out the
// one-way delay, in release order. It is a ring of Events sized at
// construction; push doubles it when full, the only allocation after
// NewLink, and only when more packets are in flight than it was sized for.
type delayLine struct {
	buf  []Event // len is a power of two
	head int
	n    int
}

func newDelayLine(size int) delayLine {
	c := 1
	for c < size {
		c <<= 1
	}
	return delayLine{buf: make([]Event, c)}
}

func (d *delayLine) push(e *Event) {
	if d.n == len(d.buf) {
		d.grow()
	}
	d.buf[(d.head+d.n)&(len(d.buf)-1)] = *e
	d.n++
}

// front returns the next packet to release; d.n must be > 0.
func (d *delayLine) front() *Event { return &d.buf[d.head] }

func (d *delayLine) pop() Event {
	e := d.buf[d.head]
	d.head = (d.head + 1) & (len(d.buf) - 1)
	d.n--
	return e
}

func (d *delayLine) grow() {
	buf := make([]Event, 2*len(d.buf))
	for i := range d.n {
		buf[i] = d.buf[(d.head+i)&(len(d.buf)-1)]
	}
	d.buf, d.head = buf, 0
}
