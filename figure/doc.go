// Package figure holds the one definition of every distribution figure
// pi2hop prints: nearest-rank percentiles, summaries, empirical CDF
// points, frame-rate shares and the millisecond conversion the reports
// use. `pi2hop flow`, `analyze`, `stats` and the lab report all call it, so
// the same samples always give the same p99 wherever it is printed.
//
// It is a leaf: standard library only, no clock, no I/O.
package figure
