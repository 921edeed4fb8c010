package hop

// The data path of an owner: read, enqueue, release, write. All of it runs
// on the owner goroutine, allocates nothing and takes no lock.

import (
	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/shaper"
)

// readBatch reads up to a batch of packets into free slots and enqueues
// them. full reports that the batch was filled.
//
// The packets are stamped with the clock read after the read, never with
// a time taken before it: a packet that reached the TUN while the owner
// was writing released packets would otherwise get an arrival time from
// before it existed, and leave the delay line early (after a stall, by
// milliseconds). The link is brought up to that time first, as
// Link.Enqueue requires.
func (o *owner) readBatch() (full bool, err error) {
	k := min(len(o.bufs), len(o.slab.free))
	if k == 0 {
		return o.readWithoutBuffer()
	}
	for i := 0; i < k; i++ {
		o.slots[i], _ = o.slab.get()
		o.bufs[i] = o.slab.buf(o.slots[i])
	}
	n, err := o.in.TryRead(o.bufs[:k], o.sizes)
	for i := k - 1; i >= n; i-- {
		o.slab.put(o.slots[i])
	}
	if n == 0 {
		return false, err
	}
	now := clock()
	o.release(now)
	for i := 0; i < n; i++ {
		o.accept(o.slots[i], o.sizes[i], now)
	}
	return n == k, err
}

// readWithoutBuffer takes one packet into scratch and drops it: with every
// slot in use, dropping here is counted, while leaving it in the TUN ring
// would only move the loss into the kernel.
func (o *owner) readWithoutBuffer() (bool, error) {
	o.bufs[0] = o.scratch
	n, err := o.in.TryRead(o.bufs[:1], o.sizes)
	if n == 1 {
		now := clock()
		pkt := o.scratch[:o.sizes[0]]
		o.st.In++
		o.st.InBytes += uint64(len(pkt))
		o.st.NoBuffer++
		if o.tap != nil {
			o.ev = shaper.Event{Meta: aqm.MetaOf(pkt, -1), Verdict: aqm.Verdict{Action: aqm.Drop}, At: now}
			o.tap.Packet(int(o.dir), int(TapDrop), now, pkt, &o.ev)
		}
	}
	return n == 1, err
}

// accept enqueues one packet just read into slot.
func (o *owner) accept(slot int32, size int, now int64) {
	pkt := o.slab.buf(slot)[:size]
	o.st.In++
	o.st.InBytes += uint64(size)
	if !aqm.View(pkt).Valid() {
		o.st.Malformed++ // MetaOf reads it as Not-ECT: Classic queue
	}
	m := aqm.MetaOf(pkt, slot)
	if o.tap != nil {
		o.tap.Packet(int(o.dir), int(TapIn), now, pkt, nil)
	}
	v := o.link.Enqueue(m, now)
	if v.Action == aqm.Drop {
		o.st.QueueDrops[v.Reason]++
		if o.tap != nil {
			m.Arrival = now
			o.ev = shaper.Event{Meta: m, Verdict: v, At: now}
			o.tap.Packet(int(o.dir), int(TapDrop), now, pkt, &o.ev)
		}
		o.slab.put(slot)
	}
}

// release runs the link up to now and finishes every packet it let go.
func (o *owner) release(now int64) {
	o.events = o.link.Poll(now, o.events[:0])
	for i := range o.events {
		o.st.Lateness.Add(now - o.events[i].At)
		o.st.Worst.Add(now - o.events[i].At)
		o.finish(&o.events[i])
	}
}

// finish writes out a released packet (setting CE if it was marked) or
// counts its drop, then frees its slot.
func (o *owner) finish(ev *shaper.Event) {
	slot := ev.Meta.Slot
	pkt := o.slab.buf(slot)[:ev.Meta.Len]
	defer o.slab.put(slot)
	if ev.Verdict.Action == aqm.Drop {
		o.st.QueueDrops[ev.Verdict.Reason]++
		if o.tap != nil {
			o.tap.Packet(int(o.dir), int(TapDrop), ev.At, pkt, ev)
		}
		return
	}
	if ev.Verdict.Action == aqm.Mark && aqm.View(pkt).SetCE() {
		o.st.Marked++
	}
	if ev.Dep > ev.Deq {
		o.lastTx = ev.Dep - ev.Deq
	}
	if ev.Verdict.Class == aqm.Classic {
		o.st.SojournC.Add(ev.Deq - ev.Meta.Arrival)
	} else {
		o.st.SojournL.Add(ev.Deq - ev.Meta.Arrival)
	}
	o.one[0] = pkt
	if _, err := o.out.Write(o.one[:]); err != nil {
		o.st.WriteErrors++
		if o.tap != nil {
			o.tap.Packet(int(o.dir), int(TapDrop), ev.At, pkt, ev)
		}
		return
	}
	o.st.Out++
	o.st.OutBytes += uint64(len(pkt))
	if o.tap != nil {
		o.tap.Packet(int(o.dir), int(TapOut), ev.At, pkt, ev)
	}
}
