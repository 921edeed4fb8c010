// Package replay runs a packet trace through a shaper.Link and any queue
// discipline aqm.NewQueue builds, in virtual time, and reports every
// event to Handlers: what `pi2hop replay` prints, and what a test or a
// model of the kernel compares.
//
// The model: virtual time starts at 0 (a Source's first packet may come
// later); the link sends one packet at a time; a packet leaves the queue
// when the link becomes free and leaves the link ceil(8·bytes·1e9/rate) ns
// later; then, unless the loss model loses it there, it waits the delay
// in a FIFO delay line (delay never reorders) and departs.
//
// One step of Engine.Run, per input packet at time t:
//
//  1. poll the link instant by instant up to t: at each instant the
//     queue's periodic update first (Handler.Update), then the end of a
//     transmission and the dequeue it starts (drops at dequeue, losses),
//     then releases from the delay line (Handler.Depart);
//  2. report the arrival (Handler.Arrival) and offer it to the queue; a
//     refusal is reported at once (Handler.Drop, AtEnqueue).
//
// After the last packet the link is polled until it is empty. Every
// update from the first arrival to then is reported, idle ones included.
//
// Sources: CSVSource (time_ns,bytes,ecn[,flow]) and CaptureSource (any
// capture pcap.Reader reads). Handlers beyond the caller's own:
// CaptureWriter (an annotated pcapng) and PcapWriter (the delivered
// packets as raw IP).
package replay
