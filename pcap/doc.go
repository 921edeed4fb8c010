// Package pcap writes annotated pcapng captures of the hop's taps and
// reads captures back (ours, or plain pcap/pcapng from tcpdump).
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
// # Reading
//
// Reader reads pcap and pcapng, gzipped or not, with link types RAW,
// IPv4, IPv6, Ethernet (VLAN tags skipped), Linux cooked v1/v2 and BSD
// loopback; link headers are taken off by hand. Every length in the file
// is checked before it is allocated: records over MaxRecord are skipped
// and counted, and a file cut mid-record ends at its last complete record
// with a Truncation. Package analyze reads captures through it for what
// the bottleneck did to each packet; replay feeds their packets through a
// link in virtual time.
package pcap
