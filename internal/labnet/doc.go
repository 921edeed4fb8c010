// Package labnet builds the small kernel topologies that the root tests
// and cmd/benchhop measure through, and reads what crossed them: one
// definition of the kernel router path and of a received rate, shared
// instead of copied. Linux only; elsewhere it has nothing to offer.
package labnet
