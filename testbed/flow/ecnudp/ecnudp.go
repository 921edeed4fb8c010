// Package ecnudp sets and reads the ECN field of UDP datagrams on Linux
// sockets, and waits for a socket with sub-millisecond precision.
//
// Send: the IP_TOS / IPV6_TCLASS socket options set the codepoint of
// everything the socket sends (the kernel honours the ECN bits for UDP);
// AppendCmsg builds a per-packet override. Receive: IP_RECVTOS /
// IPV6_RECVTCLASS make the kernel attach the field to each datagram as a
// control message (IPv4: IP_TOS, 1 byte; IPv6: IPV6_TCLASS, a 4-byte int),
// which ParseECN reads from what ReadMsgUDPAddrPort returns. On a dual-stack
// IPv6 socket both options are set, as IPv4-mapped traffic uses the IPv4
// ones.
package ecnudp

// OOBSize is enough control-message space for the ECN field of one
// datagram, IPv4 or IPv6.
const OOBSize = 64
