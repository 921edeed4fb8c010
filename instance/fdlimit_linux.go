package instance

import (
	"fmt"
	"log/slog"

	"golang.org/x/sys/unix"
)

// fdsWanted is what an instance may hold open at once: every server's
// cap of connections, and room for its devices, namespaces, capture and
// the user's command's pipes.
const fdsWanted = MaxControlConns + MaxWebConns + MaxMetricsConns + 128

// raiseFDLimit raises the soft limit on open files to the hard one: each
// control, web and metrics connection, TUN queue and capture takes an fd,
// and a crowd of connections must meet the servers' caps before the
// process runs out. The Go runtime already raises it at start (and gives
// the user's command the limit it had); this tries again if that failed,
// and says in one line when the limit stays under fdsWanted.
func raiseFDLimit(log *slog.Logger) {
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		log.Warn("cannot read the limit on open files", "err", err)
		return
	}
	var err error
	if lim.Cur < lim.Max {
		want := unix.Rlimit{Cur: lim.Max, Max: lim.Max}
		if err = unix.Setrlimit(unix.RLIMIT_NOFILE, &want); err == nil {
			lim.Cur = lim.Max
		}
	}
	if lim.Cur < fdsWanted {
		why := fmt.Sprintf("the hard limit is %d", lim.Max)
		if err != nil {
			why = fmt.Sprintf("raising it to the hard limit %d failed: %v", lim.Max, err)
		}
		log.Warn(fmt.Sprintf("open files limited to %d (%s; want %d): a crowd of connections can run the instance out of fds, and its servers then wait for them; raise it with ulimit -n (LimitNOFILE= under systemd)",
			lim.Cur, why, fdsWanted))
	}
}
