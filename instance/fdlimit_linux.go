package instance

import (
	"fmt"
	"log/slog"

	"golang.org/x/sys/unix"
)

// raiseFDLimit raises the soft limit on open files to the hard one: each
// control, web and metrics connection, TUN queue and capture takes an fd,
// and a crowd of connections must meet the servers' caps before the
// process runs out. The Go runtime already raises it at start (and gives
// the user's command the limit it had); this says, in one line, when that
// could not be done, and tries once more.
func raiseFDLimit(log *slog.Logger) {
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		log.Warn("cannot read the limit on open files", "err", err)
		return
	}
	if lim.Cur >= lim.Max {
		return
	}
	want := unix.Rlimit{Cur: lim.Max, Max: lim.Max}
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &want); err != nil {
		log.Warn(fmt.Sprintf("open files limited to %d (hard limit %d): cannot raise it: %v", lim.Cur, lim.Max, err))
	}
}
