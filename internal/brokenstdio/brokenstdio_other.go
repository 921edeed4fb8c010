//go:build !unix

// Package brokenstdio ends a run like SIGTERM when its standard output or
// error has lost its reader; elsewhere than Unix it has nothing to do.
package brokenstdio

import "context"

// Watch does nothing: without SIGPIPE a write to a broken pipe is an
// error where it happens.
func Watch(context.CancelFunc) {}
