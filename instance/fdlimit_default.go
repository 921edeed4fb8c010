//go:build !linux

package instance

import "log/slog"

// raiseFDLimit: instances run on Linux only.
func raiseFDLimit(*slog.Logger) {}
