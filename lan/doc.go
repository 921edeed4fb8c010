// Package lan has the services a box gives a LAN it shares its Internet
// connection with, as a Mac's Internet Sharing does: a DHCPv4 server
// (leases with the box as router and DNS server, a probe for another
// server on the same LAN), a caching DNS forwarder, IPv6 router
// advertisements for a ULA prefix, and the choice of a free private
// subnet.
//
// Sockets belong to the network namespace of the thread that creates
// them, so a caller that serves a LAN inside a namespace creates these
// servers inside netsys.Do; they keep working from any goroutine after.
package lan
