//go:build !linux

package privs

// Effective is unknown (all allowed) off Linux: the commands that need
// capabilities do not run there anyway.
func Effective() Set { return Set{} }
