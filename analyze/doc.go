// Package analyze reads captures (pi2hop's annotated pcapng, or plain
// pcap/pcapng from tcpdump, through pcap.Reader) for what the bottleneck
// did to each packet: ECN codepoints in and out, CE marks, drops, sojourn
// times and the DualPI2 coupling between the two queues.
//
// Analyze reads its inputs merged in time order and groups packets by
// direction (from the tap names, or from Input.Role for two tcpdump files
// taken either side of a bottleneck), matches each packet between its in
// and out (or drop) points by a hash of the fields no hop changes, and
// returns a Result: per class and per flow counts, marks and drops by
// reason, sojourn (annotations) and transit (matching) percentiles from a
// sketch (within SketchAccuracy of the exact nearest-rank value), time
// bins, ECN transitions checked against the valid set, IPv4 header
// checksum errors, the coupling check pC = (pL/k)², and each flow's
// round-trip time through the hop, both halves, timed from the up and
// down taps' in points by package rtt as the hop times it. Result renders as
// tables (WriteTable), JSON, and PNG plots (WritePlots). Its memory
// grows with flows (at most 10 000, the rest summed), time bins and the
// packets of one matching horizon, not with the packet count.
package analyze
