//go:build unix

package invoker

import "syscall"

// Credential is what a child started as u runs with: u's uid, gid and
// groups. The kernel clears every capability of a process whose uids all
// change from 0 to non-zero (capabilities(7)), so the child has none.
func (u User) Credential() *syscall.Credential {
	return &syscall.Credential{Uid: u.UID, Gid: u.GID, Groups: u.Groups}
}
