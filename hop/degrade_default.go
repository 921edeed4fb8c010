//go:build !linux

package hop

// The real-time driver needs Linux: elsewhere nothing is degraded, as
// nothing runs.
func realTimeAllowed(int) bool { return true }
func cpuLatencyAllowed() bool  { return true }
