// Package ecnudp sets and reads the ECN field of UDP datagrams on Linux,
// macOS and FreeBSD sockets, and waits for a socket with sub-millisecond
// precision. Elsewhere (Windows) its functions say which option is
// missing.
//
// Send: the IP_TOS / IPV6_TCLASS socket options set the codepoint of
// everything the socket sends (the kernel honours the ECN bits for UDP);
// AppendCmsg builds a per-packet override. Receive: IP_RECVTOS /
// IPV6_RECVTCLASS make the kernel attach the field to each datagram as a
// control message (IPv4: 1 byte, of type IP_TOS on Linux and IP_RECVTOS on
// the BSDs; IPv6: IPV6_TCLASS, a 4-byte int), which ParseECN reads from
// what ReadMsgUDPAddrPort returns. On a dual-stack IPv6 socket both
// options are set, as IPv4-mapped traffic uses the IPv4 ones.
// SO_TIMESTAMPNS (SO_TIMESTAMP on the BSDs, in µs) adds the time the
// kernel received the datagram, so that a reader can tell the path's delay
// from its own wake-up delay.
package ecnudp

import "github.com/pi2hop/pi2hop/aqm"

// OOBSize is enough control-message space for the ECN field and the
// receive time of one datagram, IPv4 or IPv6 (and both on a dual-stack
// socket).
const OOBSize = 128

// Control is what the kernel attached to one received datagram.
type Control struct {
	ECN     aqm.ECN
	HasECN  bool  // false when no ECN field was attached
	TOS     uint8 // the whole TOS / traffic class byte (DSCP and ECN), when HasECN
	Arrival int64 // Unix ns at which the kernel received it; 0 when not attached
	TTL     uint8 // the IPv4 TTL or IPv6 hop limit it arrived with, after EnableTTL
	HasTTL  bool
}
