package hop

// The data path of an owner: read, enqueue, release, write. All of it runs
// on the owner goroutine, allocates nothing and takes no lock.

import (
	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/shaper"
	"github.com/pi2hop/pi2hop/tun"
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
	var n int
	if o.pin != nil {
		n, err = o.pin.TryReadPartial(o.bufs[:k], o.sizes, o.rpart)
		for i := 0; i < n; i++ {
			o.part[o.slots[i]] = o.rpart[i]
		}
	} else {
		n, err = o.in.TryRead(o.bufs[:k], o.sizes)
	}
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
	if !aqm.Header(pkt).Valid() {
		o.st.Malformed++ // MetaOf reads it as Not-ECT: Classic queue
	}
	var m aqm.Meta
	var hash uint32
	if o.flows != nil {
		m, hash = aqm.MetaOfKeyed(pkt, slot, o.flows.key)
	} else {
		m = aqm.MetaOf(pkt, slot)
	}
	if o.tap != nil {
		o.tap.Packet(int(o.dir), int(TapIn), now, o.whole(slot, pkt), nil)
	}
	fi := int32(otherFlow)
	if o.flows != nil {
		fi = o.flows.lookup(pkt, hash, now)
		o.flows.arrive(fi, m.ECN, size, now)
	}
	v := o.link.EnqueuePacket(m, pkt, now)
	if o.flows != nil {
		if v.Action == aqm.Drop {
			o.flows.dropped(fi, v.Reason)
		} else {
			o.flowOf[slot] = fi
			o.flows.held(fi)
		}
	}
	if v.Action == aqm.Drop {
		o.st.QueueDrops[v.Reason]++
		if o.tap != nil {
			o.ev = o.link.RefusedEvent()
			o.tap.Packet(int(o.dir), int(TapDrop), now, o.whole(slot, pkt), &o.ev)
		}
		o.slab.put(slot)
	}
}

// writeBatch is the most packets handed to the output device in one
// Write: enough for the offload backend to coalesce a 64 KiB super-packet
// of any segment size down to 256 bytes.
const writeBatch = 256

// release runs the link up to now and finishes every packet it let go, in
// one pass: drops counted, marks set, and the packets to send collected
// for writing in batches (one system call each for as many as the device
// can coalesce). The events slice holds as many packets as the slab, so no
// pass, however late, makes it grow.
//
// Through a device that coalesces, on a fast link (packets under minSleep
// apart), the collected packets may be held for the next pass, up to batchSleep after the first one's
// release time, while another release is due before then (see hold): an
// owner that is never idle, reading a super-packet every few µs, would
// otherwise release and write a few segments per pass, where the same
// packets written in one run are one system call and one pass through
// the receiver's stack. This is the batching the owner already does when
// it sleeps batchSleep (owner.wait), now also when it does not sleep; the
// link's departure schedule is untouched, and the lateness recorded is
// that of the write.
func (o *owner) release(now int64) {
	o.events = o.link.Poll(now, o.events[:0])
	for i := range o.events {
		o.finish(&o.events[i], now)
	}
	if !o.hold(now) {
		o.flush()
	}
}

// hold says whether the packets collected for writing may wait for the
// next pass: the device coalesces (else holding saves no system call and
// only delays), the link is fast (its last packet took under minSleep to
// send, as for owner.plan's batching), the first of them is less than
// batchSleep late, and the link releases another before that.
func (o *owner) hold(now int64) bool {
	return len(o.wbufs) > 0 && o.coalesces && o.lastTx < minSleep && now < o.flushBy && o.link.NextRelease() < o.flushBy
}

// finish prepares a released packet for writing (setting CE if it was
// marked) or counts its drop and frees its slot.
func (o *owner) finish(ev *shaper.Event, now int64) {
	slot := ev.Meta.Slot
	pkt := o.slab.buf(slot)[:ev.Meta.Len]
	if ev.Verdict.Action == aqm.Drop {
		o.st.Lateness.Add(now - ev.At)
		o.st.Worst.Add(now - ev.At)
		o.st.QueueDrops[ev.Verdict.Reason]++
		if o.flows != nil {
			o.flows.droppedHeld(o.flowOf[slot], ev.Verdict.Reason)
		}
		if o.tap != nil {
			o.tap.Packet(int(o.dir), int(TapDrop), ev.At, o.whole(slot, pkt), ev)
		}
		o.slab.put(slot)
		return
	}
	marked := ev.Verdict.Action == aqm.Mark && aqm.Header(pkt).SetCE()
	if marked {
		o.st.Marked++
	}
	if ev.Fault != shaper.FaultNone {
		// A path fault before or after the queue: the bytes still hold the
		// DS field the packet came with (and the AQM's CE mark).
		h := aqm.Header(pkt)
		h.SetDSField(ev.DSOut(h.DSField()))
	}
	if o.flows != nil {
		o.flows.released(o.flowOf[slot], &ev.Meta, marked, aqm.Header(pkt).ECN(), ev.Verdict.Class, ev.Deq-ev.Meta.Arrival, ev.At)
	}
	if ev.Dep > ev.Deq {
		o.lastTx = ev.Dep - ev.Deq
	}
	if ev.Verdict.Class == aqm.Classic {
		o.st.SojournC.Add(ev.Deq - ev.Meta.Arrival)
	} else {
		o.st.SojournL.Add(ev.Deq - ev.Meta.Arrival)
	}
	if len(o.wbufs) == 0 {
		o.flushBy = ev.At + batchSleep
	}
	o.wbufs = append(o.wbufs, pkt)
	o.wevs = append(o.wevs, *ev)
	if o.pout != nil {
		o.wpart = append(o.wpart, o.part[slot])
	}
	if len(o.wbufs) == cap(o.wbufs) {
		o.flush()
	}
}

// flush writes the packets finish collected, then counts, taps and frees
// each; their lateness is the write's. A packet the device refuses is
// counted as a write error and the rest are written on.
func (o *owner) flush() {
	if len(o.wbufs) == 0 {
		return
	}
	now := clock()
	for i := range o.wevs {
		o.st.Lateness.Add(now - o.wevs[i].At)
		o.st.Worst.Add(now - o.wevs[i].At)
	}
	for k := 0; k < len(o.wbufs); {
		var n int
		var err error
		if o.pout != nil {
			n, err = o.pout.WritePartial(o.wbufs[k:], o.wpart[k:])
		} else {
			n, err = o.out.Write(o.wbufs[k:])
		}
		for end := k + n; k < end; k++ {
			o.sent(&o.wevs[k], o.wbufs[k], true)
		}
		if k < len(o.wbufs) && (err != nil || n == 0) {
			o.sent(&o.wevs[k], o.wbufs[k], false)
			k++
		}
	}
	clear(o.wbufs) // hold no slab slices past their packet
	o.wbufs, o.wevs, o.wpart = o.wbufs[:0], o.wevs[:0], o.wpart[:0]
}

// sent accounts for one written (ok) or refused packet and frees its slot.
func (o *owner) sent(ev *shaper.Event, pkt []byte, ok bool) {
	defer o.slab.put(ev.Meta.Slot)
	if !ok {
		o.st.WriteErrors++
		if o.tap != nil {
			o.tap.Packet(int(o.dir), int(TapDrop), ev.At, o.whole(ev.Meta.Slot, pkt), ev)
		}
		return
	}
	o.st.Out++
	o.st.OutBytes += uint64(len(pkt))
	if o.tap != nil {
		o.tap.Packet(int(o.dir), int(TapOut), ev.At, o.whole(ev.Meta.Slot, pkt), ev)
	}
}

// whole returns the packet in slot with its checksum complete, for a tap:
// a capture shows packets as they are on a wire. A partial one (see
// tun.PartialReader) is completed in place, once; it is written on as a
// complete packet, which the kernel takes as well.
func (o *owner) whole(slot int32, pkt []byte) []byte {
	if o.part != nil && o.part[slot] {
		tun.CompleteChecksum(pkt)
		o.part[slot] = false
	}
	return pkt
}
