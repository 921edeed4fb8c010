// Package flow holds pi2hop's traffic endpoints: a UDP Prague sender and
// receiver (L4S, or the same flow Not-ECT with a loss-only response), a
// video-call emulator on the same congestion control, kernel TCP bulk
// transfers as classic load, and a UDP round-trip probe with a chosen ECN
// codepoint.
//
// Every endpoint takes sockets the caller already opened (the lab opens them
// inside a network namespace, the CLI opens them normally), runs until its
// context is done or its duration ends, calls report with an Interval every
// interval, and returns a summary that carries the raw samples the lab's
// metrics need (per-ACK RTTs with their times, per-second series).
//
// The wire format is byte-compatible with L4STeam's udp_prague (see package
// wire), so either end interoperates with that reference implementation.
package flow
