package invoker

import "syscall"

// ChildAttr is how a command pi2hop runs for the user starts: as u when u
// is not nil (nil: as root, with pi2hop's identity).
//
// The command dies with pi2hop, also when pi2hop is killed: else it
// would live on in a namespace whose bottleneck is gone. The signal
// comes when the forking thread ends, so start it from a thread that
// lives as long as the process (netsys.Do's go back to the runtime's
// pool); Go sets it after the credentials, whose change would clear it
// (prctl(2)).
func ChildAttr(u *User) *syscall.SysProcAttr {
	attr := &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if u != nil {
		// Dropping every uid from 0 clears the capabilities (see
		// User.Credential).
		attr.Credential = u.Credential()
	}
	return attr
}
