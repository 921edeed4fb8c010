package hop

// The data path of an owner: read, enqueue, release, write. All of it runs
// on the owner goroutine, allocates nothing and takes no lock.

import (
	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/shaper"
	"github.com/pi2hop/pi2hop/tun"
)

// dataPath is what an owner moves packets with: its devices, link and
// buffers, the counters it keeps per packet and the observers it shows
// them to. The owner goroutine alone touches it.
type dataPath struct {
	in   tun.Pollable
	out  tun.Device
	link *shaper.Link
	slab *slab
	pace *pacer // the owner's: the batch rule (holdWrite) and the link's pace
	obs  observers

	bufs  [][]byte
	sizes []int
	slots []int32
	// With a PartialReader in and a PartialWriter out, segments keep the
	// partial checksum the kernel gave them from read to write (see
	// tun.PartialReader): pin and pout are set, rpart is the batch's flags
	// as read, part each slot's, wpart each one's in wbufs.
	pin     tun.PartialReader
	pout    tun.PartialWriter
	rpart   []bool
	part    []bool
	wpart   []bool
	scratch []byte // read target when every slot is in use
	events  []shaper.Event
	wbufs   [][]byte       // released packets to write in one call (see flush)
	wevs    []shaper.Event // each one's event
	meta    aqm.Meta       // the packet accept enqueues, for its observers
	ev      shaper.Event   // scratch event for observers of dropped packets
	dropFn  func(aqm.Meta) // droppedByChange, made once
	st      DirStats       // the counters; the reporter copies them
}

// readBatch reads up to a batch of packets into free slots and enqueues
// them. full reports that the batch was filled.
//
// The packets are stamped with the clock read after the read, never with
// a time taken before it: a packet that reached the TUN while the owner
// was writing released packets would otherwise get an arrival time from
// before it existed, and leave the delay line early (after a stall, by
// milliseconds). The link is brought up to that time first, as
// Link.Enqueue requires.
func (o *dataPath) readBatch() (full bool, err error) {
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
func (o *dataPath) readWithoutBuffer() (bool, error) {
	o.bufs[0] = o.scratch
	n, err := o.in.TryRead(o.bufs[:1], o.sizes)
	if n == 1 {
		now := clock()
		pkt := o.scratch[:o.sizes[0]]
		o.st.In++
		o.st.InBytes += uint64(len(pkt))
		o.st.NoBuffer++
		o.ev = shaper.Event{Meta: aqm.MetaOf(pkt, -1), Verdict: aqm.Verdict{Action: aqm.Drop}, At: now}
		o.obs.arrive(-1, pkt, &o.ev.Meta, 0, &o.ev, now)
	}
	return n == 1, err
}

// accept enqueues one packet just read into slot.
func (o *dataPath) accept(slot int32, size int, now int64) {
	pkt := o.slab.buf(slot)[:size]
	o.st.In++
	o.st.InBytes += uint64(size)
	if !aqm.Header(pkt).Valid() {
		o.st.Malformed++ // MetaOf reads it as Not-ECT: Classic queue
	}
	var hash uint32
	if o.obs.keyed {
		o.meta, hash = aqm.MetaOfKeyed(pkt, slot, o.obs.key)
	} else {
		o.meta = aqm.MetaOf(pkt, slot)
	}
	v := o.link.EnqueuePacket(o.meta, pkt, now)
	if v.Action != aqm.Drop {
		o.obs.arrive(slot, pkt, &o.meta, hash, nil, now) // a field: a local's address would escape through the interface
		return
	}
	o.st.QueueDrops[v.Reason]++
	o.ev = o.link.RefusedEvent()
	o.obs.arrive(slot, pkt, &o.meta, hash, &o.ev, now)
	o.slab.put(slot)
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
// The collected packets may instead be held for the next pass, as the
// batch rule (pacer.holdWrite) allows: the link's departure schedule is
// untouched, and the lateness recorded is that of the write.
func (o *dataPath) release(now int64) {
	o.events = o.link.Poll(now, o.events[:0])
	for i := range o.events {
		o.finish(&o.events[i], now)
	}
	if len(o.wbufs) > 0 && !o.pace.holdWrite(now, o.link.NextRelease()) {
		o.flush()
	}
}

// finish prepares a released packet for writing (setting CE if it was
// marked) or counts its drop and frees its slot.
func (o *dataPath) finish(ev *shaper.Event, now int64) {
	slot := ev.Meta.Slot
	pkt := o.slab.buf(slot)[:ev.Meta.Len]
	if ev.Verdict.Action == aqm.Drop {
		o.st.Lateness.Add(now - ev.At)
		o.st.Worst.Add(now - ev.At)
		o.st.QueueDrops[ev.Verdict.Reason]++
		o.obs.release(slot, pkt, ev, false)
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
	o.obs.release(slot, pkt, ev, marked)
	if ev.Dep > ev.Deq {
		o.pace.lastTx = ev.Dep - ev.Deq
	}
	if ev.Verdict.Class == aqm.Classic {
		o.st.SojournC.Add(ev.Deq - ev.Meta.Arrival)
	} else {
		o.st.SojournL.Add(ev.Deq - ev.Meta.Arrival)
	}
	if len(o.wbufs) == 0 {
		o.pace.batchFrom(ev.At)
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

// flush writes the packets finish collected, then counts each, shows it
// to the observers and frees it; their lateness is the write's. A packet
// the device refuses is counted as a write error and the rest are
// written on.
func (o *dataPath) flush() {
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
			o.sent(&o.wevs[k], o.wbufs[k], true, now)
		}
		if k < len(o.wbufs) && (err != nil || n == 0) {
			o.sent(&o.wevs[k], o.wbufs[k], false, now)
			k++
		}
	}
	clear(o.wbufs) // hold no slab slices past their packet
	o.wbufs, o.wevs, o.wpart = o.wbufs[:0], o.wevs[:0], o.wpart[:0]
}

// sent accounts for one written (ok) or refused packet and frees its
// slot; now is the write's time.
func (o *dataPath) sent(ev *shaper.Event, pkt []byte, ok bool, now int64) {
	if ok {
		o.st.Out++
		o.st.OutBytes += uint64(len(pkt))
	} else {
		o.st.WriteErrors++
	}
	o.obs.depart(ev.Meta.Slot, pkt, ev, ok, now)
	o.slab.put(ev.Meta.Slot)
}

// droppedByChange frees a packet a shrinking queue limit dropped.
func (o *dataPath) droppedByChange(m aqm.Meta) {
	now := clock()
	o.st.QueueDrops[aqm.ReasonLimit]++
	o.ev = shaper.Event{Meta: m, Verdict: aqm.Verdict{Action: aqm.Drop, Reason: aqm.ReasonLimit, Class: m.Class}, At: now}
	o.obs.release(m.Slot, o.slab.buf(m.Slot)[:m.Len], &o.ev, false)
	o.slab.put(m.Slot)
}
