package testbed

import (
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// terminalWidth reports whether w is a terminal, where the progress bar
// is redrawn in place, and its width in columns (0 if unknown).
func terminalWidth(w io.Writer) (cols int, tty bool) {
	f, ok := w.(*os.File)
	if !ok {
		return 0, false
	}
	if _, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS); err != nil {
		return 0, false
	}
	if ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ); err == nil {
		cols = int(ws.Col)
	}
	return cols, true
}
