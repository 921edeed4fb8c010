// Package metrics computes the lab's figures from raw samples, exactly as
// docs/design.md defines them: loss, goodput and
// utilisation, Jain's fairness index, received frames per second and
// stalls by the W3C webrtc-stats freeze rule. Percentiles, summaries,
// CDFs and frame-rate shares live in package figure, shared with the
// CLI shares.
//
// Every function is pure (no clock, no I/O) and takes the measurement
// window explicitly, so the warm-up a scenario excludes is the caller's
// choice and the same samples always give the same figures.
package metrics
