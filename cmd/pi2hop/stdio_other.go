//go:build !unix

package main

import "context"

// endOnBrokenStdio does nothing: without SIGPIPE a write to a broken pipe
// is an error where it happens.
func endOnBrokenStdio(context.CancelFunc) {}
