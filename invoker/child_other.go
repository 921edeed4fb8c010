//go:build !linux

package invoker

import "syscall"

// ChildAttr: commands run for the user only on Linux (in network
// namespaces); this keeps the package building elsewhere.
func ChildAttr(*User) *syscall.SysProcAttr { return nil }
