package testbed

import (
	"os"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// openPTY returns the terminal end of a new pseudo-terminal, sized rows
// by cols, and its controlling end.
func openPTY(t *testing.T, rows, cols uint16) (tty, ptm *os.File) {
	t.Helper()
	ptm, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skip("no pseudo-terminals:", err)
	}
	t.Cleanup(func() { ptm.Close() })
	fd := int(ptm.Fd())
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal("unlockpt:", err)
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err != nil {
		t.Fatal("ptsname:", err)
	}
	tty, err = os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tty.Close() })
	if err := unix.IoctlSetWinsize(int(tty.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: rows, Col: cols}); err != nil {
		t.Fatal(err)
	}
	return tty, ptm
}

// A sized terminal gets the bar; one that reports no size gets lines,
// since mpb would fit the bar to nothing.
func TestTerminalProgressOnAPseudoTerminal(t *testing.T) {
	for _, c := range []struct {
		rows, cols uint16
		bar        bool
	}{{24, 80, true}, {0, 0, false}} {
		tty, _ := openPTY(t, c.rows, c.cols)
		if p := NewTerminalProgress(tty, time.Minute); (p.cw != nil) != c.bar {
			t.Errorf("%dx%d terminal: bar %v, want %v", c.rows, c.cols, p.cw != nil, c.bar)
		}
	}
}
