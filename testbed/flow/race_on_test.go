//go:build race

package flow

// raceEnabled: the race detector slows every sender several times over,
// so rates measured under it are the CPU's, not the protocol's.
const raceEnabled = true
