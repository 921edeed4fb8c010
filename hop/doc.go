// Package hop runs pi2hop's forwarding hop: two TUN devices, one link per
// direction (shaper.Link around an aqm.Queue), taps, statistics and live
// changes. It also builds the topologies put around it: the two
// namespaces of the lab and `pi2hop shell` (Pair) and the policy routing
// of `pi2hop run` between two interfaces of this box (Gateway). Running
// one as a named instance (state file, control socket, metrics) is
// package hop/instance's job.
//
// # Data path, per direction
//
// Everything below runs on one owner goroutine locked to its OS thread
// (timer slack 1 ns, SCHED_FIFO when permitted); nothing else touches the
// direction's queue, link or buffers, so there are no locks on the path.
//
//  1. wait   ppoll on the input TUN's descriptor and the direction's
//     eventfd, with the timeout running to the link's next event
//     (end of a transmission, release from the delay line, PI update);
//     short waits are spun through, and the last stretch before a
//     lone deadline too, its length learnt from the timer's lateness
//     (see owner.wait)
//  2. read   up to Config.Batch packets into free slab slots, so the
//     backlog builds in our AQM, not in the kernel's TUN ring
//  3. poll   Link.Poll(now): everything due happens, in time order
//  4. enq    Link.Enqueue each packet read, stamped with now
//  5. out    released packets: CE set in the bytes if marked, written
//     to the output TUN; dropped ones counted by reason; slots freed
//  6. edits and stats requests are taken between batches
//
// Departures follow the link's absolute schedule, so a late wake-up
// delays a packet but never changes the rate.
//
// Malformed packets (not a well-formed IPv4/IPv6 header: truncated, bad
// IHL or length, other versions) are counted, classified Classic Not-ECT
// and forwarded like any other; the kernel may refuse to take them back
// (a TUN write of a non-IP packet fails), which counts as a write drop.
package hop
