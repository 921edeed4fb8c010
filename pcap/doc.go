// Package pcap writes annotated pcapng captures of the hop's taps and
// analyses captures (ours, or plain pcap/pcapng from tcpdump) for what the
// bottleneck did to each packet: ECN codepoints in and out, CE marks,
// drops, sojourn times and the DualPI2 coupling between the two queues.
//
// # Writing
//
// A Capture owns one pcapng file. Each tap is an interface (LINKTYPE_RAW,
// ns timestamps) named "<direction>-<point>": up-in, up-out, up-drop,
// down-in, ... AddTaps adds a direction's three. The data path calls
// Offer, which copies up to Options.Snaplen bytes into a record ring
// allocated up front (at most Options.BufferBytes) and returns at once:
// no allocation, no lock, no system call. A writer goroutine drains the ring through a 1 MiB buffer.
// When the ring is full, Offer refuses the packet and counts a capture
// drop (never a packet drop); the counts are written as each interface's
// isb_ifrecv / isb_ifdrop when a file is completed. Close (idempotent,
// callable from a signal handler) writes what was accepted and completes
// the file. With Options.MaxSize the capture rotates: FILE, FILE.1,
// FILE.2, ..., each a complete pcapng file.
//
// NewHopTap is a hop's tap (hop.Tap) that writes the six taps of a hop,
// optionally under a name prefix so several hops share one file;
// EventAnnotation turns a link's decision (shaper.Event) into the
// annotation written with a packet.
//
// Packets at -out and -drop taps carry the AQM decision as a packet
// comment (opt_comment), which Wireshark shows and tshark prints as
// frame.comment; AppendComment documents the format and ParseComment
// reads it back.
//
// # Reading and analysis
//
// Reader reads pcap and pcapng, gzipped or not, with link types RAW,
// IPv4, IPv6, Ethernet (VLAN tags skipped), Linux cooked v1/v2 and BSD
// loopback; headers are decoded by hand. Every length in the file is
// checked before it is allocated: records over MaxRecord are skipped and
// counted, and a file cut mid-record ends at its last complete record
// with a Truncation. Analyze reads its inputs merged in time order and
// groups packets by
// direction (from the tap names, or from Input.Role for two tcpdump files
// taken either side of a bottleneck), matches each packet between its in
// and out (or drop) points by a hash of the fields no hop changes, and
// returns a Result: per class and per flow counts, marks and drops by
// reason, sojourn (annotations) and transit (matching) percentiles from a
// sketch (within SketchAccuracy of the exact nearest-rank value), time
// bins, ECN transitions checked against the valid set, IPv4 header
// checksum errors and the coupling check pC = (pL/k)². Result renders as
// tables (WriteTable), JSON, and PNG plots (WritePlots). Its memory
// grows with flows (at most 10 000, the rest summed), time bins and the
// packets of one matching horizon, not with the packet count.
package pcap
