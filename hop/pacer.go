package hop

// The owner's pacer: how long the owner sleeps, how long it spins before
// a deadline, and the one rule for holding released packets for a batch
// write. Only the owner goroutine touches it.

// pacer is the owner's timing state.
type pacer struct {
	spin     int64    // lead of the spin before a deadline, ns: spinAuto, spinOff or fixed
	late     [4]int64 // learnt wake-up lateness per sleepClass, ns (spinAuto)
	priority int      // SCHED_FIFO priority of the owner thread (0 = normal)
	lastTx   int64    // transmission time of the last packet sent, ns
	// coalesces: the output device joins consecutive packets of a flow
	// into one system call (the offload backend, tun.OffloadCounter), so
	// holding released packets for one write saves calls; with plain it
	// saves none.
	coalesces bool
	// flushBy is when the packets held for a batch write are written at
	// the latest (see holdWrite).
	flushBy int64
}

// Spin modes besides a fixed lead (Config.Spin > 0).
const (
	spinAuto = 0  // lead learnt from the wake-ups (Config.Spin 0)
	spinOff  = -1 // never spin (Config.Spin < 0)
)

// batchFrom starts a batch write whose first packet was released at at:
// it is written by batchSleep after that.
func (p *pacer) batchFrom(at int64) { p.flushBy = at + batchSleep }

// holdWrite is the batch rule, the one place it is decided: the packets
// released and collected for writing may wait for the owner's next
// pass, due at next, rather than be written at now, when the device
// coalesces (else holding saves no system call and only delays), the
// link is fast (its last packet took under minSleep to send, as for
// plan's batching), and both now and the next pass come before flushBy.
//
// release asks it with the link's next release as the next pass, and run,
// before a wait, with the end of the shortest sleep (minSleep): an owner
// that is never idle, reading a super-packet every few µs, writes in one
// run what it would otherwise write a few segments per pass.
func (p *pacer) holdWrite(now, next int64) bool {
	return p.coalesces && p.lastTx < minSleep && now < p.flushBy && next < p.flushBy
}

// sleepFor is how long the owner sleeps before deadline (ppoll), and the
// lead it then spins for (see plan), at now; held says packets wait for
// a batch write, whose flushBy no sleep passes (at least 1 µs, so that
// the wait is a sleep and not a spin).
func (p *pacer) sleepFor(now, deadline int64, lone, stats, held bool) (sleep, lead int64) {
	sleep, lead = p.plan(deadline-now, lone, stats)
	if held && sleep > 0 {
		sleep = max(min(sleep, p.flushBy-now), 1_000)
	}
	return sleep, lead
}

// plan splits a wait of d ns into a ppoll of sleep ns and a spin on the
// clock for the lead after it (sleep+lead = d), or says to spin all of
// d (sleep 0; also when nothing is left to wait). lone says at most one
// packet is in flight, stats that the deadline is the next snapshot's
// (no packet waits on it, so it gets no lead).
//
// A wait under minSleep is spun through when the packet is alone (a ping
// on an idle link) or packets are far apart (under ~500 Mbit/s): a
// sleep's lateness would be added to its release. Closer packets sleep
// batchSleep with no lead: their releases are batched on purpose.
//
// Every other wait gets the learnt lead, capped at a quarter of the wait,
// so spinning takes under a quarter of a core however the waits come.
// Short waits get it too, not only long ones: a link of 10-100 Mbit/s
// sends a packet every 0.12-1.2 ms and arrivals cut waits shorter still,
// so a lead kept for long waits would leave most of its releases with a
// bare timer's lateness (docs/performance.md has the lateness and CPU
// with and without it).
func (p *pacer) plan(d int64, lone, stats bool) (sleep, lead int64) {
	switch {
	case d <= 0:
		return 0, 0
	case d < minSleep && p.spin != spinOff && (lone || p.lastTx >= minSleep):
		return 0, 0
	case d < minSleep:
		return batchSleep, 0
	case p.spin == spinOff || stats:
		return d, 0
	}
	lead = p.spinLead(sleepClass(d), d)
	return d - lead, lead
}

// Bounds of the learnt lead: at least minLead, at most maxLead and never
// more than a quarter of the wait, so spinning stays under a quarter of a
// core even when every wait gets a lead.
const (
	minLead     = 10_000  // ns
	maxLead     = 300_000 // ns
	leadMargin  = 5_000   // ns added to the learnt lateness
	initialLate = 50_000  // ns, the guess before the first wake-up
)

// sleepClass sorts a sleep by length (under 0.5 ms, 2 ms, 8 ms, longer):
// a longer sleep wakes later, so each class learns its own lateness.
func sleepClass(d int64) int {
	switch {
	case d < 500_000:
		return 0
	case d < 2_000_000:
		return 1
	case d < 8_000_000:
		return 2
	}
	return 3
}

// spinLead is how long before a deadline in class the owner stops
// sleeping: a fixed Config.Spin, or the lateness learnt for the class.
func (p *pacer) spinLead(class int, d int64) int64 {
	if p.spin > 0 {
		return min(p.spin, d)
	}
	late := p.late[class]
	if late == 0 {
		late = initialLate
	}
	return min(max(late+leadMargin, minLead), maxLead, d/4)
}

// learnLateness follows a high envelope of the timed wake-ups' lateness
// in class: quick to rise (a quarter of the gap per wake-up), slow to
// fall (1/64), so the lead covers nearly every wake-up, not the median.
func (p *pacer) learnLateness(class int, late int64) {
	e := p.late[class]
	if e == 0 {
		e = initialLate
	}
	if late > e {
		e += (late - e) / 4
	} else {
		e -= (e - late) / 64
	}
	p.late[class] = max(e, 1)
}
