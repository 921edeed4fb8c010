// Package rtt measures the round-trip time of every flow passively, from
// the packets a hop forwards in both directions, without touching the
// endpoints. The hop sits between a client and a server, so each round
// trip splits in two halves that it times apart: the client half (hop →
// client → hop) and the server half (hop → server → hop). Their sum is
// the flow's round trip through the hop.
//
// A sample is the time between a packet seen one way and the first
// packet the other way that answers it:
//
//   - TCP with timestamps (RFC 7323): the first packet carrying a new
//     TSval is remembered; the first packet the other way whose TSecr
//     echoes it consumes it (the rule of pping and epping). Later packets
//     with the same TSval, later echoes and retransmitted segments give
//     no sample.
//   - TCP without timestamps: the end sequence number of each segment of
//     new data is remembered; the first ACK that covers it gives a sample
//     unless it also covers retransmitted data (Karn's rule).
//   - QUIC short headers with the spin bit (RFC 9000 §17.4, RFC 9312 §3):
//     the time from a spin edge one way to the edge the other way that
//     answers it, once the flow has shown enough edges in turn to trust.
//     A QUIC flow whose endpoints do not spin (a constant bit, or one
//     set at random) has StatusNoSpin.
//   - ICMP and ICMPv6 echo: request and reply matched by identifier and
//     sequence number; pi2hop's probes (request and reply by sequence
//     number) and udp_prague DATA and ACK messages (sequence number and
//     the ACK's acknowledged sequence number) alike.
//
// A Table holds a fixed number of flows and, per flow and direction, a
// fixed number of outstanding packets (a flow with more in flight is
// timed on every other one, then every fourth..., evenly; see push): all
// its memory is allocated by NewTable, and Packet allocates nothing and
// takes no lock. One goroutine
// (the owner) calls Packet; a reader gets a copy through CopyTo, which
// the owner runs when asked (as hop's flow table hands over its copy),
// and turns it into figures with Snapshot.Flows.
package rtt
