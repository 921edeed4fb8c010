// Package ping measures the idle round-trip time of a path with ICMP
// echo requests sent from a network namespace: what tests and benchhop
// compare a hop's added delay against.
package ping
