package instance

import (
	"io/fs"
	"syscall"

	"github.com/pi2hop/pi2hop/invoker"
)

// childAttr is how the shell's command starts: as u when u is not nil.
func childAttr(u *invoker.User) *syscall.SysProcAttr {
	// The command dies with pi2hop, also when pi2hop is killed: else it
	// would live on in a namespace whose bottleneck is gone. The signal
	// comes when the forking thread ends, and InClient's thread lives as
	// long as the process (it goes back to the runtime's pool); Go sets it
	// after the credentials, whose change would clear it (prctl(2)).
	attr := &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if u != nil {
		// Dropping every uid from 0 clears the capabilities (see
		// invoker.User.Credential).
		attr.Credential = u.Credential()
	}
	return attr
}

// fileOwner is the uid that owns fi's file.
func fileOwner(fi fs.FileInfo) (uid uint32, ok bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return st.Uid, true
}
