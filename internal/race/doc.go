// Package race tells tests whether the race detector is on: it slows
// every goroutine several times over and allocates on its own, so rates
// and allocation counts measured under it are not the code's.
package race
