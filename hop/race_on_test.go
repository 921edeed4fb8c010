//go:build race

package hop

// raceEnabled: the race detector allocates on its own; allocation counts
// mean nothing under it.
const raceEnabled = true
