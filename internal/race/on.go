//go:build race

package race

// Enabled reports that this binary was built with -race.
const Enabled = true
