//go:build !linux

package testbed

import "io"

// terminalWidth: the lab runs only on Linux; elsewhere the progress bar
// is printed line by line.
func terminalWidth(io.Writer) (cols int, tty bool) { return 0, false }
