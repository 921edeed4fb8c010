//go:build !linux

package hop

// The real-time driver needs Linux: elsewhere nothing is degraded, as
// nothing runs.
func realTimeRefused(int) string { return "" }
func cpuLatencyAllowed() bool    { return true }
