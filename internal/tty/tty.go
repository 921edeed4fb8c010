// Package tty tells whether output goes to a terminal, where a person
// reads it, or elsewhere (a pipe, a file), where a program does.
package tty

import (
	"io"
	"os"
)

// IsTerminal reports whether w is a terminal.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && isTerminal(int(f.Fd()))
}
