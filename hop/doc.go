// Package hop runs pi2hop's forwarding hop: two TUN devices, one link per
// direction (shaper.Link around an aqm.Queue), taps, statistics and live
// changes. It forwards between any two devices it is given: building the
// network around them (the two namespaces of the lab and `pi2hop shell`,
// the policy routing of `pi2hop run`) is package topology's job, and
// running one as a named instance (state file, control socket, metrics)
// package instance's.
//
// # Flow of a packet
//
// One direction; every step on its owner goroutine, in this order:
//
//  1. read: the input TUN into a free slab slot (dataPath.readBatch)
//  2. enqueue: stamped with the clock, counted, Link.Enqueue'd into the aqm.Queue
//  3. arrive: shown to the observers (refused or not); a refused one is freed
//  4. release: Link.Poll lets it go at its time, CE set if marked, or drops it
//  5. hold: collected for one write while the batch rule allows (pacer.holdWrite)
//  6. write: the output TUN, counted, shown to the observers, slot freed
//
// # Data path, per direction
//
// Everything below runs on one owner goroutine locked to its OS thread
// (timer slack 1 ns, SCHED_FIFO when permitted); nothing else touches the
// direction's queue, link or buffers, so there are no locks on the path.
// The owner (owner.go) is three parts: the data path that moves packets
// (datapath.go), the pacer that decides when to sleep, spin and write a
// batch (pacer.go), and the reporter that hands out counters, CPU time
// and the flow table's copy (reporter.go); live changes are in
// control.go.
//
// The loop (owner.run) takes these steps, in this order:
//
//  1. edits: drain the eventfd if it woke us, then apply the pending
//     changes (takeEdits): they land between batches, never in one
//  2. release: Link.Poll(now): everything due happens, in time order; each
//     released packet gets CE in its bytes if marked, and all of them go
//     to the output TUN in one Write per pass (up to 256; the offload
//     backend coalesces runs of one flow into one system call), or, with
//     that backend on a link sending packets under 25 µs apart, in one
//     Write per 100 µs:
//     held for the next passes while another is released before then
//     (see pacer.holdWrite); each dropped one is counted by reason; slots
//     freed after the write; the down owner then shows its RTT table the
//     up owner's arrivals due by now (see Observers)
//  3. read: if the last wait found the input readable: up to
//     Config.Batch packets into free slab slots (with the offload
//     backend: the segments of the endpoints' TSO/USO super-packets, each
//     its own packet for the queue from here on), so the backlog builds
//     in our AQM, not in the kernel's TUN ring (with no free slot, one
//     packet is read and counted as a no-buffer drop)
//  4. enqueue: the clock is read after the read, the link is released up
//     to it (as 2), and each packet is Link.Enqueue'd stamped with it
//  5. release: again, for what fell due while reading
//  6. stats: a snapshot is published when a reader asked for one or the
//     stats interval passed
//  7. wait: unless the batch was full (then back to 1 at once): ppoll
//     on the input TUN's descriptor and the direction's eventfd, with
//     the timeout running to the link's next event (end of a
//     transmission, release from the delay line, PI update) or the next
//     snapshot, or the write of held packets; when packets leave closer
//     than 25 µs apart it sleeps 100 µs and releases them together; short waits are spun through,
//     and the last stretch before every other deadline too, its length
//     learnt from the timer's lateness (see owner.wait, pacer.plan)
//
// # Observers
//
// What watches packets go by without changing their fate (the capture
// tap, the flow table) is an observer (observer.go), added to a
// direction's observers before its owner runs; the path calls each only
// at the points it names (points), so with none it makes no call. The
// points of a packet's life, in order: arrive (read and offered to the
// queue, with the queue's refusal if it refused; a packet with no free
// buffer arrives refused, with slot -1), release (let go by the link, to
// be written, or dropped) and depart (written, or refused by the device),
// the last two only for a packet the queue took. Each is called on the
// owner goroutine and must not block or allocate, and must copy what it
// keeps of the packet. The two directions' owners call theirs on two
// goroutines: an observer that sees both keeps its state per direction
// or shares it without a lock the owner could wait on. The passive RTT
// table (rtt.go) is one: the down owner owns it, and the up owner's
// observer hands it what it reads of each arrival over a lock-free ring
// (a full ring drops the record and counts it), which the down owner
// drains, in time order, before each of its own arrivals and at each
// pass of its loop. quietObserver stands for the calls one has no use
// for.
//
// Departures follow the link's absolute schedule, so a late wake-up
// delays a packet but never changes the rate.
//
// Malformed packets (not a well-formed IPv4/IPv6 header: truncated, bad
// IHL or length, other versions) are counted, classified Classic Not-ECT
// and forwarded like any other; the kernel may refuse to take them back
// (a TUN write of a non-IP packet fails), which counts as a write drop.
package hop
